PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test docs test-cluster test-upstream control-plane kueue lint bench bench-fgd conformance run clean

$(STAMP): pyproject.toml examples/plugins/coscheduling/pyproject.toml examples/plugins/gpushare/pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY) (Python >= 3.11)"; exit 1; }
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,docs]'
	$(BIN)/pip install --quiet -e examples/plugins/coscheduling
	$(BIN)/pip install --quiet -e examples/plugins/gpushare
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/kubeberth simulate examples/cluster.yaml --seed 1

test: $(STAMP)
	$(BIN)/ruff check operator tests benchmarks examples/plugins
	$(BIN)/mypy
	$(BIN)/mypy --strict examples/plugins/coscheduling/kubeberth_coscheduling
	$(BIN)/mypy --strict examples/plugins/gpushare/kubeberth_gpushare
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/python -m pytest

# The documentation site (mkdocs.yml, docs/) into site/; --strict: a broken link or reference fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# kube-apiserver, etcd, kubectl and upstream kube-scheduler, built from Kubernetes' Go modules
# (tools/k8s/, version pinned in its go.mod): minutes the first time, seconds with Go's caches warm.
control-plane:
	tools/k8s/build.sh .cache/k8s/bin

# Kueue's CRDs (tests/cluster/test_kueue.py) and its controller manager (test_kueue_e2e.py), from its Go
# module (tools/kueue/, version pinned in its go.mod); KUEUE_CRDS_ONLY=1 for the CRDs alone (seconds).
kueue:
	tools/kueue/build.sh .cache/kueue

# The real-control-plane suite alone (make test runs it too, when the binaries are built).
test-cluster: $(STAMP) control-plane
	$(BIN)/python -m pytest tests/cluster

# The differential fuzzer (tests/cluster/fuzz.py): random clusters through kube-scheduler and kubeberth;
# prints the counts and the time taken. Replay one case: python -m tests.cluster.fuzz --seed S --case I
FUZZ_SEED ?= 1
FUZZ_WORKLOAD_CLUSTERS ?= 40
FUZZ_CLUSTERS ?= 64
test-upstream: $(STAMP) control-plane
	$(BIN)/python -m tests.cluster.fuzz --seed $(FUZZ_SEED) --clusters $(FUZZ_CLUSTERS) --min-pods 300
	$(BIN)/python -m tests.cluster.fuzz --flavour workloads --seed $(FUZZ_SEED) --clusters $(FUZZ_WORKLOAD_CLUSTERS) --min-pods 200

conformance: $(STAMP)
	$(BIN)/python -m pytest tests/conformance
	@if [ -f ../shared/conformance/run.py ]; then \
		$(BIN)/python ../shared/conformance/run.py --cli "$(BIN)/kubeberth simulate" ../shared/conformance/cases; fi

lint: $(STAMP)
	$(BIN)/ruff check operator tests benchmarks examples/plugins
	$(BIN)/mypy
	$(BIN)/mypy --strict examples/plugins/coscheduling/kubeberth_coscheduling
	$(BIN)/mypy --strict examples/plugins/gpushare/kubeberth_gpushare

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run $(ARGS)

# The FGD paper's table (5 openb traces x 6 policies x 10 seeds, --protocol artifact --tune 1.3) as one
# sweep on a local Dask cluster of 2 workers, beside the artifact's numbers (benchmarks/fgd_table.py).
bench-fgd: $(STAMP)
	$(BIN)/python -m benchmarks.fgd_table $(ARGS)

run: $(STAMP)
	$(BIN)/kubeberth run $(ARGS)

clean:
	rm -rf $(VENV) build site *.egg-info operator/*.egg-info
