"""kubeberth: a Kubernetes scheduler run as a kopf operator."""

__version__ = "0.1.0"
