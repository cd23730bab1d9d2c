PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint bench conformance run clean

$(STAMP): pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY) (Python >= 3.11)"; exit 1; }
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/kubeberth simulate examples/cluster.yaml --seed 1

test: $(STAMP)
	$(BIN)/ruff check operator tests benchmarks
	$(BIN)/python -m pytest

conformance: $(STAMP)
	$(BIN)/python -m pytest tests/conformance
	@if [ -f ../shared/conformance/run.py ]; then \
		$(BIN)/python ../shared/conformance/run.py --cli "$(BIN)/kubeberth simulate" ../shared/conformance/cases; fi

lint: $(STAMP)
	$(BIN)/ruff check operator tests benchmarks

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run $(ARGS)

run: $(STAMP)
	$(BIN)/kubeberth run $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info operator/*.egg-info
