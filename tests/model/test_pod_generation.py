"""The Pod view's metadata.generation: what the conditions the scheduler writes observe."""

from __future__ import annotations

from typing import Any

import pytest

from kubeberth.model import Pod
from kubeberth.model.errors import ModelError
from tests.builders import pod_dict


def with_generation(value: Any) -> dict[str, Any]:
    raw = pod_dict("p")
    raw["metadata"]["generation"] = value
    return raw


@pytest.mark.parametrize("raw, want", [
    pytest.param(pod_dict("p"), 0, id="absent"),
    pytest.param(with_generation(1), 1, id="as-created"),
    pytest.param(with_generation(7), 7, id="edited"),
])
def test_generation_is_read(raw: dict[str, Any], want: int) -> None:
    assert Pod(raw).generation == want


@pytest.mark.parametrize("value", [
    pytest.param("2", id="string"),
    pytest.param(True, id="bool"),
    pytest.param(-1, id="negative"),
    pytest.param(1.5, id="float"),
])
def test_a_bad_generation_is_an_error_naming_the_field(value: Any) -> None:
    with pytest.raises(ModelError, match=r"pod default/p.*metadata\.generation"):
        Pod(with_generation(value))
