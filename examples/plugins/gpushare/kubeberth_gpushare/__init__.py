"""GPU sharing for kubeberth: the FGD paper's resource model and its six scheduling policies
(USENIX ATC'23, Weng et al., as its artifact implements them), as out-of-tree plugins on
kubeberth's public plugin API.

The entry point (group `kubeberth.plugins`) names this module: its `PLUGINS` are the accounting
plugin `OpenGpuShare` and the policies `Random`, `DotProd`, `GpuClustering`, `GpuPacking`,
`BestFit`, `FGD`; `profiles/<Policy>.yaml` enable each as the paper runs it.
"""

from pathlib import Path

from .accounting import OpenGpuShare
from .fgd import FGD
from .policies import BestFit, DotProd, GpuClustering, GpuPacking, Random

PLUGINS = [OpenGpuShare, Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD]
PROFILES = Path(__file__).parent / "profiles"

__all__ = ["FGD", "PLUGINS", "PROFILES", "BestFit", "DotProd", "GpuClustering", "GpuPacking", "OpenGpuShare",
           "Random"]
