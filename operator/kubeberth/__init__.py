"""kubeberth: a Kubernetes scheduler run as a kopf operator."""
