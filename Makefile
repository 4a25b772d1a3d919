# The two set-up commands of the README. Both create .venv, install the package with its extras
# and make sure a Vulkan driver exists (Mesa's lavapipe when the machine has no GPU).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test setup vulkan lint bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "python3-venv missing: installing it with apt"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; \
	  rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	@touch $(STAMP)

setup: $(STAMP) vulkan

vulkan: $(STAMP)
	@bash tools/ensure_vulkan.sh $(PY)

# The main job on the built-in default asset: a ~1M-triangle procedural rock.
demo: setup
	@mkdir -p out
	$(VENV)/bin/preprocess --builtin rock -o out/rock.tess
	$(VENV)/bin/tessera info out/rock.tess --verify

test: setup
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) tools/bench_preprocess.py

clean:
	rm -rf $(VENV) out .pytest_cache
