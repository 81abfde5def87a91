"""The MinatoLoader artifact's PyTorch 3D-UNet, the MLPerf reference model (github.com/Rahm-no/
MinatoLoader, commit 09eb8a309aab425bdb0ffd19245b30a79b0ef925, PyTorch/model/{unet3d,layers,
losses}.py), copied as they are but for two changes marked PATCH: unet3d.py imports .layers
instead of model.layers, and layers.py stands in for the MLPerf logging imports (weight-init log
events only)."""
from .unet3d import Unet3D  # noqa: F401
from .losses import DiceCELoss  # noqa: F401
