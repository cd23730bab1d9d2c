"""kubernetes_asyncio by the piece for `kubeberth run` (lazy_client.py): the run path and kopf load a
few of its modules, and every name of the full client still resolves. Each case in a fresh
interpreter (the stand-ins go into sys.modules)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from kubeberth.lazy_client import model_module


def run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize(("cls", "module"), [
    ("V1ObjectMeta", "v1_object_meta"),
    ("V1OwnerReference", "v1_owner_reference"),
    ("AdmissionregistrationV1ServiceReference", "admissionregistration_v1_service_reference"),
    ("V1beta1CSIStorageCapacity", "v1beta1_csi_storage_capacity"),
    ("CoreV1EventSeries", "core_v1_event_series"),
])
def test_a_model_class_names_its_module(cls: str, module: str) -> None:
    assert model_module(cls) == module


def test_the_run_path_and_kopf_load_a_few_modules_and_the_same_classes() -> None:
    out = run("""
        import sys
        from kubeberth import lazy_client
        assert lazy_client.install()
        import kopf
        import kubeberth.operator.app
        from kubeberth.operator.app import ApiClient, Configuration
        from kubeberth.operator.connection import ApiException, k8s_config
        from kopf._cogs.helpers import thirdparty
        loaded = [m for m in sys.modules if m.startswith("kubernetes_asyncio")]
        assert "kubernetes_asyncio.client.models.v1_pod" not in sys.modules
        from kubernetes_asyncio.client.models.v1_object_meta import V1ObjectMeta
        assert thirdparty.V1ObjectMetaAsync is V1ObjectMeta
        from kubernetes_asyncio.client.exceptions import ApiException as Real
        assert ApiException is Real and callable(k8s_config.load_kube_config)
        assert Configuration(host="https://x").host == "https://x"
        print(len(loaded))
    """)
    assert int(out) < 60  # the full client is over 800


def test_any_other_name_loads_the_full_client_once() -> None:
    out = run("""
        from kubeberth import lazy_client
        lazy_client.install()
        import kubernetes_asyncio
        from kubernetes_asyncio.client import CoreV1Api, V1Pod
        from kubernetes_asyncio.client.api.core_v1_api import CoreV1Api as Real
        from kubernetes_asyncio.client.models.v1_pod import V1Pod as RealPod
        import kubernetes_asyncio.client as client
        assert CoreV1Api is Real and V1Pod is RealPod
        assert client.StorageV1Api.__name__ == "StorageV1Api"  # the package's own names, all of them
        assert kubernetes_asyncio.__version__
        try:
            client.NoSuchThing
        except AttributeError as exc:
            print(exc)
    """)
    assert "has no attribute 'NoSuchThing'" in out


def test_not_installed_over_a_loaded_client() -> None:
    out = run("""
        import kubernetes_asyncio.client
        from kubeberth import lazy_client
        print(lazy_client.install())
    """)
    assert out == "False"


def test_a_star_import_sees_the_whole_package() -> None:
    out = run("""
        from kubeberth import lazy_client
        lazy_client.install()
        from kubernetes_asyncio.client import *  # noqa: F403
        print(CoreV1Api.__name__, V1Pod.__name__)  # noqa: F405
    """)
    assert out == "CoreV1Api V1Pod"
