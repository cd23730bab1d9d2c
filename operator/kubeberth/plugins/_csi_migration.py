"""In-tree inline volumes and the CSI drivers they migrate to, as csi-translation-lib's
IsInlineMigratable and TranslateInTreeInlineVolumeToCSI decide them (only the driver name and
the translation's failures are needed here)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

# The pod volume's source field -> the CSI driver its in-tree plugin migrates to.
INLINE_MIGRATABLE: Mapping[str, str] = {
    "gcePersistentDisk": "pd.csi.storage.gke.io",
    "awsElasticBlockStore": "ebs.csi.aws.com",
    "cinder": "cinder.csi.openstack.org",
    "azureDisk": "disk.csi.azure.com",
    "azureFile": "file.csi.azure.com",
    "vsphereVolume": "csi.vsphere.vmware.com",
    "portworxVolume": "pxd.portworx.com",
}

_AWS_VOLUME_ID = re.compile(r"vol-[^/]*")


class TranslationError(ValueError):
    """An inline volume the CSI translation rejects."""


def is_inline_migratable(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(field) is not None for field in INLINE_MIGRATABLE)


def inline_csi_driver(volume: Mapping[str, Any]) -> str | None:
    """The CSI driver the inline volume translates to; None for a volume that is not an
    in-tree migratable one. Raises TranslationError where the translation fails."""
    for field, driver in INLINE_MIGRATABLE.items():
        source = volume.get(field)
        if source is None:
            continue
        if not isinstance(source, Mapping):
            raise TranslationError(f"volume {volume.get('name')!r}: {field} is not an object")
        if field == "awsElasticBlockStore":
            _check_ebs_volume_id(str(source.get("volumeID") or ""))
        elif field == "azureDisk":
            kind = source.get("kind")
            if kind is not None and str(kind).lower() != "managed":
                raise TranslationError(f"kind({kind}) is not supported in csi migration")
        return driver
    return None


def _check_ebs_volume_id(volume_id: str) -> None:
    """KubernetesVolumeIDToEBSVolumeID: a bare id passes; aws://zone/vol-... must name a volume."""
    if not volume_id.startswith("aws://"):
        return
    try:
        path = urlsplit(volume_id).path
    except ValueError as exc:
        raise TranslationError(f"Invalid disk name ({volume_id}): {exc}") from exc
    if not _AWS_VOLUME_ID.fullmatch(path.strip("/")):
        raise TranslationError(f"Invalid format for AWS volume ({volume_id})")
