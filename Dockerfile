# kubeberth: the scheduler operator image.
#   docker build -t kubeberth/kubeberth:0.1.0 .
# PLUGINS: paths (in this build context) of plugin distributions to install beside kubeberth;
# their entry points (group kubeberth.plugins) are found at run time. Coscheduling, for example:
#   docker build --build-arg PLUGINS=examples/plugins/coscheduling -t kubeberth/kubeberth:0.1.0-cosched .
ARG PLUGINS=""
FROM python:3.11-slim AS build
WORKDIR /src
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY pyproject.toml README.md ./
COPY operator ./operator
COPY examples/plugins ./examples/plugins
ARG PLUGINS
RUN python -m venv /opt/kubeberth \
 && /opt/kubeberth/bin/pip install --upgrade pip \
 && /opt/kubeberth/bin/pip install . $PLUGINS \
 && /opt/kubeberth/bin/python -m compileall -q /opt/kubeberth

FROM python:3.11-slim
LABEL org.opencontainers.image.title="kubeberth" \
      org.opencontainers.image.description="A Kubernetes scheduler in Python, run as a kopf operator"
COPY --from=build /opt/kubeberth /opt/kubeberth
ENV PATH=/opt/kubeberth/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Non-root, matching runAsUser in manifests/deployment.yaml; the root filesystem is read-only.
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["kubeberth"]
CMD ["run", "--metrics-port=10259"]
