# SPDX-License-Identifier: GPL-2.0
# rothp: read-only file THP for Linux 6.12 LTS. One target per user action;
# each stage is a script in scripts/. `make help` lists them.

KERNEL ?= patched
ifeq ($(filter baseline patched,$(KERNEL)),)
$(error KERNEL must be baseline or patched, not '$(KERNEL)')
endif
S := scripts
# ARCH=x86_64 (default) | arm64: the guest's architecture; ARM64_PAGES=4k
# (default) | 16k | 64k the page size of arm64's kernels.
ARCH ?= x86_64
ifeq ($(ARCH),x86)
override ARCH := x86_64
endif
ifeq ($(filter x86_64 arm64,$(ARCH)),)
$(error ARCH must be x86_64 or arm64, not '$(ARCH)')
endif
ARM64_PAGES ?= 4k
ifeq ($(filter 4k 16k 64k,$(ARM64_PAGES)),)
$(error ARM64_PAGES must be 4k, 16k or 64k, not '$(ARM64_PAGES)')
endif
export ARCH ARM64_PAGES
MAKEFLAGS += --no-print-directory
export KERNEL_DEB_VERSION ALLOW_DOWNGRADE ACCEL FILTER TRACE TEST_TIMEOUT BOOT_TIMEOUT GUEST_MEM EXTRA_CONFIG FORCE
PREEMPT ?= full
export UPSTREAM_FULL PREEMPT GUEST_CPUS MATRIX_OBJS_ONLY BUILD_EACH
ifeq ($(filter full voluntary none,$(PREEMPT)),)
$(error PREEMPT must be full, voluntary or none, not '$(PREEMPT)')
endif

# check runs the debug kernel, demo the plain one, unless DEBUG= says otherwise.
check_flavour = $(if $(filter 0 no n,$(DEBUG)),,debug)
demo_flavour = $(if $(filter 1 yes y,$(DEBUG)),debug,)
preempt_sfx = $(if $(filter-out full,$(PREEMPT)),-preempt-$(PREEMPT))
arch_sfx = $(if $(filter arm64,$(ARCH)),-arm64$(if $(filter-out 4k,$(ARM64_PAGES)),-$(ARM64_PAGES)))
check_name = $(KERNEL)$(if $(check_flavour),-$(check_flavour))$(preempt_sfx)$(arch_sfx)
demo_name = $(KERNEL)$(if $(demo_flavour),-$(demo_flavour))$(preempt_sfx)$(arch_sfx)

.PHONY: help deps fetch apply build image check check-full demo bench deb publish stress hugetext \
	docs-check series-export series-check series-status matrix coverage install clean distclean

help:
	@echo 'rothp make targets:'
	@echo '  make demo            build if needed, boot the patched kernel, show a program'
	@echo '                       making its own text huge with madvise(MADV_HUGEPAGE)'
	@echo '  make check           build if needed, boot the patched debug kernel, run all'
	@echo '                       kselftests; last line: N passed, N failed, N skipped'
	@echo '  make check KERNEL=baseline   the same tests on pristine 6.12'
	@echo '  make check-full      make check with all of the kernel'"'"'s own mm selftests'
	@echo '                       (guest/upstream-full.list too)'
	@echo '  make stress DURATION=$(DURATION)   soak the debug kernel for DURATION seconds with the'
	@echo '                       stress program, half on ext4, half on xfs'
	@echo '  make bench           baseline and patched measured in one run:'
	@echo '                       results/bench.json, results/bench.md'
	@echo '  make publish         a complete bench run'"'"'s figures into README.rst and the'
	@echo '                       cover letter, its iTLB plot to Documentation/ (make bench'
	@echo '                       writes results/ only)'
	@echo '  make deb             Debian packages (linux-image, linux-headers) of the patched'
	@echo '                       kernel in build/deb/: CONFIG=debian (Debian'"'"'s config,'
	@echo '                       DEB_FLAVOUR=amd64|cloud-amd64) or CONFIG=rothp (quick),'
	@echo '                       contents checked, the kernel booted under QEMU'
	@echo '  make hugetext        build the hugetext tool for this machine: build/host/hugetext'
	@echo '  make install         install hugetext and its man page (PREFIX=/usr/local DESTDIR=)'
	@echo '  make deps | fetch | apply | build | image    the single stages'
	@echo '  make series-export   tree commits -> patches/ (format-patch, series file)'
	@echo '  make series-status   whether patches/ equals the tree'"'"'s commits (changes neither)'
	@echo '  make series-check    checkpatch --strict and a build of every patch in order'
	@echo '  make matrix          the robot'"'"'s builds: x86-64, THP/RO-THP/SHMEM/tracing/'
	@echo '                       MEMCG/SMP off, i386, arm64, clang, Debian'"'"'s config; W=1 and'
	@echo '                       sparse, 0 new warnings: results/matrix.md, matrix.json'
	@echo '                       (MATRIX="cfg ..." a subset, MATRIX_OBJS_ONLY=1, BUILD_EACH=1)'
	@echo '  make coverage        the share of the added lines the check tests execute, from'
	@echo '                       a gcov kernel: results/coverage.md, coverage.json'
	@echo '  make docs-check      htmldocs of the kernel docs the series touches, no warning'
	@echo '  make clean           remove kernel builds and results (keeps the source tree)'
	@echo '  make distclean       remove build/ and results/, the source tree too'
	@echo 'Variables: KERNEL=patched|baseline DEBUG=0|1 ACCEL=tcg|kvm|auto FILTER=regex'
	@echo '           ARCH=x86_64|arm64 (default x86_64; arm64 cross-built, under TCG)'
	@echo '           ARM64_PAGES=4k|16k|64k (default 4k): arm64'"'"'s page size'
	@echo '           PREEMPT=full|voluntary|none (default full) GUEST_CPUS=N (default 2)'
	@echo '           TRACE=1 (huge_memory trace events of failing tests in the log)'
	@echo '           KERNEL_DEB_VERSION=$(or $(KERNEL_DEB_VERSION),6.12.118-1~deb12u1)'
	@echo '           ALLOW_DOWNGRADE=1 (make deps: install the pinned linux-source over a newer one)'

# DEPS='bench deb matrix [CONFIG...]': what those targets need too, one group or
# several (sudo make deps DEPS=bench).
deps:
	@$(S)/deps.sh $(DEPS)

fetch: deps
	@$(S)/fetch.sh

apply: fetch
	@$(S)/apply.sh

build: apply
	@$(S)/build.sh $(KERNEL) $(if $(filter 1 yes y,$(DEBUG)),debug)

image: apply
	@$(S)/image.sh

# The variables a target reads are checked before anything is fetched or
# built (scripts/vars.sh); KERNEL and PREEMPT above.
goal_vars := $(addsuffix -vars,$(filter check demo stress bench,$(MAKECMDGOALS)))
VARS_RULES := check-vars demo-vars stress-vars bench-vars
.PHONY: $(VARS_RULES)
$(VARS_RULES):
	@DEBUG='$(DEBUG)' DURATION='$(DURATION)' $(S)/vars.sh $(@:-vars=)
deps: | $(goal_vars)

# A guest run that fails (no boot, a crash, the time limit) says so, and
# its results are still parsed: the runner's missing plan or end fails the
# check with the rest of what ran.
check: apply
	@$(S)/build.sh $(KERNEL) $(check_flavour)
	@$(S)/image.sh
	@$(S)/test-host.sh results/host
	@$(S)/boot.sh $(check_name) check results/$(check_name) || \
		echo "rothp: the $(check_name) guest run failed (above); what it reported follows" >&2
	@mkdir -p results
	@$(S)/rothp-host parse results/$(check_name) results/check.ktap results/host

# The longer upstream mm selftests too (guest/upstream-full.list).
check-full:
	@$(MAKE) check UPSTREAM_FULL=1 BOOT_TIMEOUT=$(or $(BOOT_TIMEOUT),6000)

demo: apply
	@$(S)/build.sh $(KERNEL) $(demo_flavour)
	@$(S)/image.sh
	@$(S)/boot.sh $(demo_name) demo results/demo-$(demo_name) || \
		{ echo "rothp: the $(demo_name) demo guest failed (above)" >&2; exit 1; }
	@$(S)/show-demo.sh results/demo-$(demo_name)

# stress: the soak. The guest gets DURATION seconds of stress plus half an
# hour for booting, setting up and the final checks. The default is the
# guest runner's own (ROTHP_STRESS_DURATION of scripts/contract.sh).
DURATION ?= $(shell . $(S)/contract.sh && echo "$$ROTHP_STRESS_DURATION")
stress: apply
	@$(S)/build.sh $(KERNEL) $(check_flavour)
	@$(S)/image.sh
	@BOOT_TIMEOUT=$$(($(DURATION) + 1800)) \
		$(S)/boot.sh $(check_name) stress results/stress-$(check_name) duration=$(DURATION) || \
		echo "rothp: the $(check_name) stress guest run failed (above); what it reported follows" >&2
	@mkdir -p results
	@$(S)/rothp-host parse results/stress-$(check_name) results/stress.ktap

bench: apply
	@$(S)/deps.sh bench
	@$(S)/bench.sh

# deb: Debian packages of the patched kernel (scripts/deb.sh); CONFIG=debian
# (Debian's config, DEB_FLAVOUR=amd64 or cloud-amd64) or CONFIG=rothp.
CONFIG ?= debian
deb: apply
	@$(S)/deps.sh deb
	@DEB_FLAVOUR='$(DEB_FLAVOUR)' $(S)/deb.sh '$(CONFIG)'

publish:
	@$(S)/rothp-host bench-publish results Documentation/bench-itlb.svg README.rst \
		patches/0000-cover-letter.patch

hugetext:
	@$(MAKE) -C hugetext OUTPUT=$(CURDIR)/build/host

# PREFIX and DESTDIR, given on the command line, reach hugetext/Makefile.
install:
	@$(MAKE) -C hugetext OUTPUT=$(CURDIR)/build/host install

series-export:
	@$(S)/series-export.sh

series-status: fetch
	@$(S)/series-status.sh

docs-check: apply
	@$(S)/docs-check.sh

matrix: apply
	@$(S)/deps.sh matrix $(MATRIX)
	@$(S)/matrix.sh $(MATRIX)

coverage: apply
	@$(S)/coverage.sh

series-check: apply
	@$(S)/series-check.sh $(if $(filter 0 no n,$(BUILD_EACH)),--no-build)

clean:
	rm -rf build/obj build/image build/image-arm64* build/selftests build/selftests-arm64* \
		build/headers build/headers-arm64* build/upstream-mm build/upstream-mm-arm64* \
		build/logs results

distclean:
	rm -rf build results
