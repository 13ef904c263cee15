# SPDX-License-Identifier: GPL-2.0
# rothp: read-only file THP for Linux 6.12 LTS. One target per user action;
# each stage is a script in scripts/. `make help` lists them.

KERNEL ?= patched
ifeq ($(filter baseline patched,$(KERNEL)),)
$(error KERNEL must be baseline or patched, not '$(KERNEL)')
endif
S := scripts
MAKEFLAGS += --no-print-directory
export KERNEL_DEB_VERSION ACCEL FILTER TEST_TIMEOUT BOOT_TIMEOUT GUEST_MEM EXTRA_CONFIG FORCE

# check runs the debug kernel, demo the plain one, unless DEBUG= says otherwise.
check_flavour = $(if $(filter 0 no n,$(DEBUG)),,debug)
demo_flavour = $(if $(filter 1 yes y,$(DEBUG)),debug,)
check_name = $(KERNEL)$(if $(check_flavour),-$(check_flavour))
demo_name = $(KERNEL)$(if $(demo_flavour),-$(demo_flavour))

.PHONY: help deps fetch apply build image check demo bench series-export series-check \
	series-status clean distclean

help:
	@echo 'rothp make targets:'
	@echo '  make demo            build if needed, boot the patched kernel, show a program'
	@echo '                       making its own text huge with madvise(MADV_HUGEPAGE)'
	@echo '  make check           build if needed, boot the patched debug kernel, run all'
	@echo '                       kselftests; last line: N passed, N failed, N skipped'
	@echo '  make check KERNEL=baseline   the same tests on pristine 6.12'
	@echo '  make bench           baseline and patched measured in one run:'
	@echo '                       results/bench.json, results/bench.md'
	@echo '  make deps | fetch | apply | build | image    the single stages'
	@echo '  make series-export   tree commits -> patches/ (format-patch, series file)'
	@echo '  make series-check    checkpatch --strict and a build of every patch in order'
	@echo '  make clean           remove kernel builds and results (keeps the source tree)'
	@echo 'Variables: KERNEL=patched|baseline DEBUG=0|1 ACCEL=tcg|kvm|auto FILTER=regex'
	@echo '           KERNEL_DEB_VERSION=$(or $(KERNEL_DEB_VERSION),6.12.118-1~deb12u1)'

deps:
	@$(S)/deps.sh

fetch: deps
	@$(S)/fetch.sh

apply: fetch
	@$(S)/apply.sh

build: apply
	@$(S)/build.sh $(KERNEL) $(if $(filter 1 yes y,$(DEBUG)),debug)

image: apply
	@$(S)/image.sh

check: apply
	@$(S)/build.sh $(KERNEL) $(check_flavour)
	@$(S)/image.sh
	@$(S)/boot.sh $(check_name) check results/$(check_name) || true
	@mkdir -p results
	@$(S)/parse.py results/$(check_name) results/check.ktap

demo: apply
	@$(S)/build.sh $(KERNEL) $(demo_flavour)
	@$(S)/image.sh
	@$(S)/boot.sh $(demo_name) demo results/demo-$(demo_name) || true
	@$(S)/show-demo.sh results/demo-$(demo_name)

bench: apply
	@$(S)/bench.sh

series-export:
	@$(S)/export-series.sh

series-status: fetch
	@$(S)/export-series.sh --check

series-check: apply
	@$(S)/check-series.sh $(if $(filter 0 no n,$(BUILD_EACH)),--no-build)

clean:
	rm -rf build/obj build/image build/selftests build/headers build/logs results

distclean:
	rm -rf build results
