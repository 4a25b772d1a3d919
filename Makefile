# The two set-up commands of the README. Both create .venv, install the package with its extras
# and make sure a Vulkan driver exists (Mesa's lavapipe when the machine has no GPU).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo forest test check setup vulkan lint bench clean

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

# The main job on the built-in default asset: a ~1M-triangle procedural rock, preprocessed, then
# rendered as a grid of 64 instances (64M triangles at full detail) to out/rock.png with the stats.
demo: setup
	@mkdir -p out
	$(VENV)/bin/preprocess --builtin rock -o out/rock.tess
	$(VENV)/bin/tessera info out/rock.tess --verify
	$(VENV)/bin/tessera render out/rock.tess --instances 64 --ground --view iso --fill 1.7 -o out/rock.png

# A million rocks and trees on the built-in terrain (assets/forest.py): the scene file and its
# transforms in out/, the assets cached in ~/.cache/tessera; then `tessera view out/forest-scene.json`
forest: setup
	@mkdir -p out
	$(VENV)/bin/preprocess --builtin forest -o out/forest-scene.json
	$(VENV)/bin/tessera render out/forest-scene.json --size 1280x720 -o out/forest.png

test: setup
	@bash tools/ensure_xvfb.sh
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q --durations=15

# the quick loop while working: lint and the tests not marked slow (under 90 s on 2 cores)
check: setup
	@bash tools/ensure_xvfb.sh
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -x -m "not slow"

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: setup
	$(PY) tools/bench_preprocess.py
	@mkdir -p out/bench
	@test -f out/igea.tess || $(VENV)/bin/preprocess ../shared/assets/igea.obj -o out/igea.tess -q
	$(VENV)/bin/tessera bench out/igea.tess --scene orbit --instances 256 --size 512x512
	$(VENV)/bin/tessera bench --json out/bench/suite.json

clean:
	rm -rf $(VENV) out .pytest_cache
