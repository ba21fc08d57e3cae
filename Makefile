# gpufleet.netval — developer and operator entry points.
# `make demo` and `make test` are the two commands README.md promises for a
# fresh Debian machine (as root): both install what they need first.

SHELL := /bin/bash
# The main venv: the newest ansible-core (requirements-dev.txt) on the Python it needs; the lab and demo run on it.
VENV ?= .venv
MAIN_PYTHON := 3.13
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# The other ansible-core releases CI tests (version:Python): those still maintained and the newest that installs on
# Python 3.11. Each gets ansible-test sanity, the unit tests and ansible-lint in a venv of its own under .venvs/;
# meta/runtime.yml's requires_ansible states exactly this range (tests/quality checks it).
ANSIBLE_MATRIX := 2.19.14:3.11 2.20.10:3.12
MATRIX_VENVS := $(foreach entry,$(ANSIBLE_MATRIX),.venvs/ansible-$(word 1,$(subst :, ,$(entry))))
COLLECTIONS := $(CURDIR)/.cache/collections
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

# Debian packages the collection, the lab and the tests use (chromium: the report page is loaded headless in tests/quality;
# shellcheck: ansible-test sanity's shellcheck test, skipped without it; openmpi-bin: the lab launches NCCL with the real
# mpirun and orted over SSH; redis-server: the shared peer-lease backend in the tests).
APT_PACKAGES := iperf3 ethtool openssh-server openssh-client pciutils iputils-ping iproute2 rsync git procps kmod coreutils chromium \
                shellcheck openmpi-bin util-linux redis-server

PROFILE ?= healthy-400g
# real (rails on switches, storage and front-end NICs, IPoIB MTUs, a shaped management network) or ideal (the first boxes).
SITE ?= real
NODES ?= 2
PEERS ?= 1
NODE_PROFILES ?=
FAULT ?=
NODE ?=
UNPINNED ?=
PROMOTE ?=
BENCH_JSON ?=

.PHONY: help deps apt venv matrix collection test units quality sanity lint docs build ee-context ee demo \
        lab-up lab-down lab-status lab-fault bench bench-matrix clean

help:
	@echo "make demo    - set up and run validate.yml on the built-in lab"
	@echo "make test    - run the whole test suite (units, sanity, lint, docs on every ansible-core of the matrix; the lab)"
	@echo "make lab-up [PROFILE=healthy-400g NODES=2 PEERS=1 SITE=real|ideal] | lab-status | lab-down"
	@echo "make lab-fault FAULT=<name>|clear [NODE=<host>] [SIDE=node|peer (mtu-mismatch)]"
	@echo "make bench NODES=16 PEERS=4 [PROMOTE=1] [DCGMI_SECONDS=20] [LOCAL_WHILE_WAITING=0] [PROFILE_DURATIONS=1] [BENCH_JSON=out.json] - time validate.yml on the lab (docs/BENCH.md)"
	@echo "make bench SIMULATE=1 NODES=1024 PEERS=2 FORKS=64 [PROMOTE=1] [SCALE=0.01] - the same on simulated hosts, no lab"
	@echo "make bench-matrix [PROMOTE=1] [BENCH_JSON=out.json] - N 1,4,16 x P 1,2,4, the serial loop, the projection"

deps: apt venv collection

# Install missing Debian packages (needs root and apt-get; skipped when all are present).
apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to install: $$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: requirements-dev.txt requirements-test.txt
	rm -rf $(VENV)
	$$(scripts/find_python.sh $(MAIN_PYTHON)) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# One venv per ansible-core of ANSIBLE_MATRIX, made side by side.
matrix: $(foreach venv,$(MATRIX_VENVS),$(venv)/.installed)

.venvs/ansible-%/.installed: requirements-test.txt
	@python=$$(echo "$(ANSIBLE_MATRIX)" | tr ' ' '\n' | grep "^$*:" | cut -d: -f2); \
	rm -rf .venvs/ansible-$* && $$(scripts/find_python.sh $$python) -m venv .venvs/ansible-$* && \
	.venvs/ansible-$*/bin/python -m pip install --quiet --upgrade pip && \
	.venvs/ansible-$*/bin/python -m pip install --quiet ansible-core==$* -r requirements-test.txt
	touch $@

# Make this checkout visible to ansible as gpufleet.netval (the root is the collection).
collection:
	@mkdir -p $(COLLECTIONS)/ansible_collections/gpufleet
	@ln -sfn $(CURDIR) $(COLLECTIONS)/ansible_collections/gpufleet/netval

# The whole suite (scripts/test_suite.sh): unit tests and quality gates on two workers; then the lab and end-to-end
# tests (root, network namespaces) one at a time, since they share one lab, with the ansible-core matrix (sanity, units
# and ansible-lint on every other ansible-core CI tests) niced beside them; the matrix's table comes last.
test: deps
	$(MAKE) -j 2 matrix
	scripts/test_suite.sh $(foreach entry,$(ANSIBLE_MATRIX),.venvs/ansible-$(word 1,$(subst :, ,$(entry))):$(word 2,$(subst :, ,$(entry))))

units: deps
	PATH=$(CURDIR)/$(BIN):$$PATH $(PY) -m pytest -ra tests/unit

quality: deps
	PATH=$(CURDIR)/$(BIN):$$PATH $(PY) -m pytest -ra tests/quality

sanity: deps
	scripts/ansible_test.sh sanity --venv --python $(MAIN_PYTHON)

# An Ansible home of its own: ansible-lint also resolves modules from ~/.ansible/collections (stale copies live there).
lint: deps
	ANSIBLE_HOME=$(CURDIR)/.cache/ansible-home/lint $(BIN)/ansible-lint --profile production

build: deps
	mkdir -p build && $(BIN)/ansible-galaxy collection build --force --output-path build .

# The execution environment (ee/execution-environment.yml, ansible-builder 3; docs/AWX.md):
# ee-context writes its build context under build/ee/context from a fresh collection tarball;
# ee builds the image (EE_RUNTIME podman or docker; EE_TAG names it).
EE_TAG ?= gpufleet-netval-ee:latest
EE_RUNTIME ?= podman
ee-context: deps
	rm -rf build/ee && mkdir -p build/ee/collection
	$(BIN)/ansible-galaxy collection build --force --output-path build/ee/collection .
	$(BIN)/ansible-builder create -f ee/execution-environment.yml -c build/ee/context --output-filename Containerfile

ee: ee-context
	$(BIN)/ansible-builder build -f ee/execution-environment.yml -c build/ee/context --container-runtime $(EE_RUNTIME) -t $(EE_TAG)

# The main job on the built-in lab: a healthy node and one whose first NIC
# trained at Gen4, validated against a known-good peer.
DEMO_NODE_PROFILES ?= node02=gen4-nic0
demo: deps
	$(MAKE) lab-up NODE_PROFILES=$(DEMO_NODE_PROFILES)
	$(BIN)/ansible-playbook -i inventories/lab playbooks/validate.yml -l new_nodes
	@echo; echo "reports: reports/latest/ (index.html, summary.md, summary.txt, summary.json, junit.xml, nodes/, letters/); evidence: evidence/"
	@cat reports/latest/summary.txt

lab-up: deps
	$(PY) -m lab.netval_lab up --profile $(PROFILE) --nodes $(NODES) --peers $(PEERS) --site $(SITE) \
	  $(if $(NODE_PROFILES),--node-profiles $(NODE_PROFILES),) $(if $(UNPINNED),--unpinned,) $(if $(MESH),--mesh,)

lab-status: deps
	$(PY) -m lab.netval_lab status

lab-down:
	$(PY) -m lab.netval_lab down

lab-fault: deps
	$(PY) -m lab.netval_lab fault $(FAULT) $(if $(NODE),--node $(NODE),) $(if $(SIDE),--side $(SIDE),)

# The fleet benchmark (docs/BENCH.md): brings the lab up as NODES x PEERS with no node pinned to a peer, runs
# validate.yml under the task_timeline callback and prints the figures; its last line is
# ratio_to_ideal=<x> overhead_per_node_s=<y> controller_peak_mib=<z> peer_overlap_s=<w>.  On the lab, not in CI.
bench: deps
	$(PY) scripts/bench.py --nodes $(NODES) --peers $(PEERS) $(if $(PROMOTE),--promote) $(if $(BENCH_JSON),--json-out $(BENCH_JSON)) \
		$(if $(DCGMI_SECONDS),--dcgmi-seconds $(DCGMI_SECONDS)) $(if $(filter 0,$(LOCAL_WHILE_WAITING)),--no-local-while-waiting) \
		$(if $(SIMULATE),--simulate) $(if $(FORKS),--forks $(FORKS)) $(if $(SCALE),--scale $(SCALE)) \
		$(if $(filter 1,$(PROFILE_DURATIONS)),--profile-durations)

bench-matrix: deps
	$(PY) scripts/bench.py --matrix --project $(if $(PROMOTE),--promote) $(if $(BENCH_JSON),--json-out $(BENCH_JSON))

clean:
	rm -rf build .cache .pytest_cache .hypothesis tests/output .venvs
