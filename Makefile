# qgmd - decentralized training daemon.  `make help` lists the targets.

PREFIX      ?= /usr/local
CC          ?= gcc
MPICC       ?= mpicc
NP          ?= 8
SANITIZE    ?=

# The version is written once, in include/qgm.h (QGM_VERSION_MAJOR, _MINOR,
# _PATCH); the shared library's name, libqgm.pc and the man page take it
# from there.
VERSION     := $(shell awk '/^\#define QGM_VERSION_(MAJOR|MINOR|PATCH) /{ \
                 v = v s $$3; s = "." } END { print v }' include/qgm.h)
ifeq ($(VERSION),)
$(error include/qgm.h: no QGM_VERSION_MAJOR, _MINOR and _PATCH lines)
endif
SOVERSION   := 0

WARN        := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
BASE_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -g $(WARN) -MMD -MP
ifneq ($(SANITIZE),)
BASE_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDSAN       := -fsanitize=$(SANITIZE)
endif
CFLAGS      ?=
override CFLAGS := $(BASE_CFLAGS) $(CFLAGS)
LIB_CFLAGS  := -fPIC -fvisibility=hidden -DQGM_BUILDING
LIB_LIBS    := -lblis -lz -lm
MPI_CFLAGS  := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LIBS    := $(shell $(MPICC) --showme:link 2>/dev/null)
UV_LIBS     := -luv

# Open MPI and thread settings, exported to every target: tools/mpi.env
# (tools/sweep reads the same file).
MPI_ENV     := $(shell sed -n 's/^\([A-Za-z_]*=[^ ]*\).*/\1/p' tools/mpi.env)
ifeq ($(shell id -u),0)
MPI_ENV     += $(shell sed -n 's/^root: *\([A-Za-z_]*=[^ ]*\).*/\1/p' tools/mpi.env)
endif
$(foreach setting,$(MPI_ENV),$(eval export $(setting)))
MPIRUN      := mpirun --bind-to none

# Headers: what daemon/, tools/ and bench/ may include is include/qgm.h,
# and only libqgm and the tests see the library's internal headers (the
# build fails when anything else includes one).
PUBLIC_INC  := -Iinclude
INTERNAL_INC := -Iinclude -Ilibqgm
# qgm.h's experimental section (kernel selection, benchmark hooks, the
# daemon's hot-path hooks) is declared only with this macro: the library,
# the daemon, the benchmarks and the tests, which link libqgm statically,
# are built with it; the job layer and the tools keep to the stable API.
EXPERIMENTAL := -DQGM_STATIC_LINKING_ONLY
LIB_CFLAGS  += $(EXPERIMENTAL)

LIB_SRC     := $(sort $(wildcard libqgm/*/*.c))
LIB_OBJ     := $(LIB_SRC:.c=.o)
DAEMON_SRC  := $(sort $(wildcard daemon/*.c))
DAEMON_OBJ  := $(DAEMON_SRC:.c=.o)
# The job layer (job/): what qgmd and qgm-sim share (flags, set-up), free
# of MPI and libuv.
JOB_SRC     := $(sort $(wildcard job/*.c))
JOB_OBJ     := $(JOB_SRC:.c=.o)
UNIT_SRC    := $(sort $(wildcard test/unit_*.c))
UNIT_BIN    := $(UNIT_SRC:.c=)
TOOL_SRC    := $(sort $(wildcard tools/*.c))
TOOL_BIN    := $(TOOL_SRC:.c=)
SIM_SRC     := $(sort $(wildcard tools/sim/*.c))
SIM_OBJ     := $(SIM_SRC:.c=.o)
SIM         := tools/qgm-sim
BENCH_OPTIM := bench/optim
MPI_TEST_SRC := $(sort $(wildcard test/mpi_*.c))
MPI_TEST_BIN := $(MPI_TEST_SRC:.c=)
# Fault injection too slow for `make check` (signal storms, repeated runs).
FAULT_TEST_SRC := $(sort $(wildcard test/fault_*.c))
FAULT_TEST_BIN := $(FAULT_TEST_SRC:.c=)
TEST_HELPER := test/helpers.o

STATIC_LIB  := libqgm/libqgm.a
SHARED_LIB  := libqgm/libqgm.so.$(VERSION)
DAEMON      := daemon/qgmd
SOCIAL_INC  := libqgm/graph/social_edges.inc

.PHONY: all deps run check unit-check mpi-check cluster-check slurm-check install uninstall clean help \
        header-check layer-check cppcheck bench-loop bench-optim bench-models bench-epoch bench-cluster reproduce \
        fuzz fuzz-run valgrind py-check check-faults

all: $(STATIC_LIB) $(SHARED_LIB) $(DAEMON) $(TOOL_BIN) $(SIM) $(BENCH_OPTIM) \
     $(UNIT_BIN) $(MPI_TEST_BIN)

help:
	@echo "make            build libqgm (.a and .so), daemon/qgmd, the tools and the tests"
	@echo "make deps       install the Debian packages qgmd needs (as root)"
	@echo "make run        deps + build + train the main job (NP=$(NP) ranks, ring)"
	@echo "make check      deps + build + every test (unit, MPI, Python, across emulated hosts)"
	@echo "make unit-check   only the unit tests (cmocka)"
	@echo "make mpi-check  only the MPI tests (the daemon under mpirun)"
	@echo "make py-check   only the Python tests: the tools, the command line, tools/sweep"
	@echo "make cluster-check  only the tests across emulated hosts (root)"
	@echo "make slurm-check  only the Slurm tests on emulated hosts (root; installs Slurm)"
	@echo "make install    install into PREFIX=$(PREFIX) (DESTDIR honoured)"
	@echo "make uninstall  remove what make install put into PREFIX"
	@echo "make clean      remove everything the build made"
	@echo "make cppcheck   static analysis of the project's code"
	@echo "make header-check  every header compiles on its own"
	@echo "make layer-check   the layers' boundaries (includes, printing, the modes' rooms)"
	@echo "make bench-optim  optimizer step bandwidth against a triad"
	@echo "make bench-loop overlap and idle cost of the daemon's loop"
	@echo "make help       this list"
	@echo "make reproduce  the hard-heterogeneity grid of docs/RESULTS.md (hours; resumable; SWEEP_FLAGS=...)"
	@echo "make bench-models  qgmd's model kernels against PyTorch (installs python3-torch)"
	@echo "make bench-epoch   whole-job s/epoch against PyTorch and the GEMM floor"
	@echo "make bench-cluster  all-reduce vs gossip vs PyTorch on emulated hosts (root)"
	@echo "make valgrind   the unit tests under valgrind memcheck"
	@echo "make check-faults  slow fault injection: signals at every moment, ..."
	@echo "make fuzz       build the libFuzzer targets (clang; not part of check)"
	@echo "make fuzz-run   run each fuzz target FUZZ_TIME=$(FUZZ_TIME) s, niced"
	@echo "make check SANITIZE=address,undefined   everything under ASan+UBSan"
	@echo "make check V=1  every test's whole output (default: summaries, and a failure's detail)"

deps:
	@tools/deps

# ---------------------------------------------------------------- library
$(LIB_OBJ): %.o: %.c
	$(CC) $(CFLAGS) $(LIB_CFLAGS) $(KERNEL_CFLAGS) $(INTERNAL_INC) -c $< -o $@

# The layer kernels are loops over feature maps that only run at speed
# vectorised (and a ReLU only without branches), which gcc does at -O3.
# The SIMD micro-kernels are compiled for their instruction sets and only
# called after a run-time CPU check (gemm.c), so the library stays portable.
LAYER_OBJ   := $(addprefix libqgm/nn/,act.o conv.o conv_direct.o conv_grid.o gemm.o groupnorm.o pool.o winograd.o)
$(LAYER_OBJ):         KERNEL_CFLAGS := -O3
ifeq ($(shell uname -m),x86_64)
libqgm/nn/gemm_avx2.o:   KERNEL_CFLAGS := -O3 -mavx2 -mfma
# The Winograd transforms copy rows of 8-32 floats, which gcc would turn
# into memmove calls costing more than the copies.
libqgm/nn/winograd_avx2.o: KERNEL_CFLAGS := -O3 -mavx2 -mfma -fno-tree-loop-distribute-patterns
libqgm/nn/gemm_avx512.o: KERNEL_CFLAGS := -O3 -mavx512f -mfma
libqgm/nn/conv_direct_avx2.o:   KERNEL_CFLAGS := -O3 -mavx2 -mfma
libqgm/nn/conv_direct_avx512.o: KERNEL_CFLAGS := -O3 -mavx512f -mfma
endif
# The same for the convolutions' runs of an output row (10-32 floats).
libqgm/nn/conv.o: KERNEL_CFLAGS := -O3 -fno-tree-loop-distribute-patterns

# The optimizer steps, the vector kernels and the compression codecs are
# streams over the model: let the vectorizer keep loops whose length is
# only known at run time (it adds a scalar epilogue), and let sqrtf
# vectorize (no errno: its argument is never negative there).
STREAM_CFLAGS := -fvect-cost-model=dynamic -fno-math-errno
libqgm/optim/optim_%.o libqgm/core/vec.o libqgm/compress/compress.o: \
  LIB_CFLAGS += $(STREAM_CFLAGS)
# The social graph's edge list, embedded as a C string so that it does not
# depend on the working directory or an install path.
$(SOCIAL_INC): topologies/davis-southern-women.edges
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@

libqgm/graph/topology_graphs.o: $(SOCIAL_INC)

$(STATIC_LIB): $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libqgm.so.$(SOVERSION) $(LDSAN) -o $@ $^ $(LIB_LIBS)
	ln -sf libqgm.so.$(VERSION) libqgm/libqgm.so.$(SOVERSION)
	ln -sf libqgm.so.$(VERSION) libqgm/libqgm.so

# ---------------------------------------------------------------- daemon
# The git revision of the tree, for the metrics' config record ("" outside
# a checkout); the file is rewritten only when the revision changes.
REVISION    := $(shell git describe --always --dirty 2>/dev/null)
REVISION_INC := daemon/revision.inc
$(shell echo '#define QGMD_REVISION "$(REVISION)"' | cmp -s - $(REVISION_INC) || \
        echo '#define QGMD_REVISION "$(REVISION)"' > $(REVISION_INC))

$(DAEMON_OBJ): %.o: %.c
	$(CC) $(CFLAGS) $(EXPERIMENTAL) $(MPI_CFLAGS) $(PUBLIC_INC) -Ijob -c $< -o $@

$(JOB_OBJ): %.o: %.c
	$(CC) $(CFLAGS) $(PUBLIC_INC) -c $< -o $@

$(DAEMON): $(DAEMON_OBJ) $(JOB_OBJ) $(STATIC_LIB)
	$(CC) $(LDSAN) -o $@ $(DAEMON_OBJ) $(JOB_OBJ) $(STATIC_LIB) $(MPI_LIBS) $(UV_LIBS) $(LIB_LIBS)

# ---------------------------------------------------------------- tools
# Tools may use the job layer (qgm-inspect: the sections qgmd adds to a
# checkpoint), never the daemon's headers.
$(TOOL_BIN): tools/%: tools/%.c $(STATIC_LIB)
	$(CC) $(CFLAGS) $(PUBLIC_INC) -Ijob -o $@ $< $(STATIC_LIB) $(LDSAN) $(LIB_LIBS)

$(SIM_OBJ): %.o: %.c
	$(CC) $(CFLAGS) $(PUBLIC_INC) -Ijob -c $< -o $@

$(SIM): $(SIM_OBJ) $(JOB_OBJ) $(STATIC_LIB)
	$(CC) $(LDSAN) -o $@ $(SIM_OBJ) $(JOB_OBJ) $(STATIC_LIB) $(LIB_LIBS)

# ---------------------------------------------------------------- benchmarks
$(BENCH_OPTIM): bench/optim.c $(STATIC_LIB)
	$(CC) $(CFLAGS) $(STREAM_CFLAGS) $(EXPERIMENTAL) $(PUBLIC_INC) -o $@ $< $(STATIC_LIB) $(LDSAN) $(LIB_LIBS)

bench-optim: $(BENCH_OPTIM)
	./$(BENCH_OPTIM)

# ---------------------------------------------------------------- tests
$(TEST_HELPER): test/helpers.c test/helpers.h
	$(CC) $(CFLAGS) $(EXPERIMENTAL) $(INTERNAL_INC) -c $< -o $@

test/%: test/%.c $(TEST_HELPER) $(STATIC_LIB)
	$(CC) $(CFLAGS) $(EXPERIMENTAL) $(INTERNAL_INC) $(TEST_JOB_INC) -o $@ $< $(TEST_JOB_OBJ) $(TEST_HELPER) $(STATIC_LIB) $(LDSAN) -lcmocka $(LIB_LIBS)

# The unit tests of the job layer link the job layer.
JOB_UNIT_BIN := test/unit_record test/unit_elastic test/unit_newest_slot \
                test/unit_collapse test/unit_sync test/unit_memory_limit \
                test/unit_gossip_rounds
$(JOB_UNIT_BIN): $(JOB_OBJ)
$(JOB_UNIT_BIN): TEST_JOB_OBJ := $(JOB_OBJ)
$(JOB_UNIT_BIN): TEST_JOB_INC := -Ijob

# The tests print only their summary lines, and all they printed when
# they fail (test/quiet); V=1 shows everything as it comes.
V           ?= 0
# make check builds with a job per core.
CHECK_JOBS   = $(shell nproc 2>/dev/null || echo 2)
QUIET       := $(if $(filter 1,$(V)),,test/quiet)

unit-check: $(UNIT_BIN) $(TOOL_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $(QUIET) ./$$t; done

mpi-check: $(DAEMON) $(TOOL_BIN) $(SIM) $(MPI_TEST_BIN)
	@set -e; for t in $(MPI_TEST_BIN); do echo "== $$t"; $(QUIET) ./$$t; done

# Across emulated hosts (tools/qgm-cluster; root and network namespaces,
# or every test says why it skipped).
cluster-check: $(DAEMON)
	@echo "== test/cluster_test.py"; $(QUIET) /usr/bin/python3 -B test/cluster_test.py

# Slurm's daemons on emulated hosts (tools/qgm-slurm). As root, Slurm's
# Debian packages are installed first; without root, namespaces or the
# packages every test says why it skipped. The lock keeps two runs'
# namespaces apart.
slurm-check: $(DAEMON)
	@if [ "$$(id -u)" -eq 0 ]; then tools/deps slurm; fi
	@echo "== test/slurm_test.py"; $(QUIET) flock -o /tmp/qgm-netns.lock /usr/bin/python3 -B test/slurm_test.py

# The tools, the command line and the records of a run seen from outside,
# with a real JSON parser, and tools/sweep (test/py/test_*.py, standard
# library only): unittest, ending with a plain "N passed, N failed,
# N skipped" line. -B: no bytecode in the tree.
py-check: $(DAEMON) $(TOOL_BIN) $(SIM)
	@echo "== test/py"
	@cd test/py && $(if $(QUIET),../quiet,) /usr/bin/python3 -B summary.py . 2>&1

# The suites on emulated hosts mostly wait (on shaped links, on timeouts
# that find a lost host, on Slurm's time limit), so they run beside the
# MPI and Python suites, which keep the cores busy, and print after them.
# qgm-cluster picks a free /24 under a lock, so the clusters that the two
# sides bring up never share one.
check: deps
	@$(MAKE) --no-print-directory -j$(CHECK_JOBS) all $(UNIT_BIN) $(MPI_TEST_BIN)
	@$(MAKE) --no-print-directory layer-check
	@$(MAKE) --no-print-directory unit-check
	@hosts_log=$$(mktemp /tmp/qgm-check-hosts.XXXXXX); \
	trap 'rm -f "$$hosts_log" "$$hosts_log.status"' EXIT; \
	{ $(MAKE) --no-print-directory cluster-check slurm-check >"$$hosts_log" 2>&1; \
	  echo $$? >"$$hosts_log.status"; } & \
	local=0; $(MAKE) --no-print-directory mpi-check py-check || local=$$?; \
	wait; cat "$$hosts_log"; hosts=$$(cat "$$hosts_log.status"); \
	[ "$$local" -eq 0 ] && [ "$$hosts" -eq 0 ]
	@echo "make check: all tests passed"

check-faults: $(DAEMON) $(TOOL_BIN) $(FAULT_TEST_BIN)
	@set -e; for t in $(FAULT_TEST_BIN); do echo "== $$t"; ./$$t; done
	@echo "make check-faults: all tests passed"

# Open MPI leaks a little at exit by design; LeakSanitizer would fail
# every MPI program for it. Our own leaks are caught by the unit tests
# (no MPI) and by valgrind.
ifneq ($(findstring address,$(SANITIZE)),)
export ASAN_OPTIONS  := detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS := print_stacktrace=1:halt_on_error=1
BASE_CFLAGS += -fno-sanitize-recover=undefined
endif

valgrind: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== valgrind $$t"; \
	  valgrind -q --error-exitcode=1 --leak-check=full --show-possibly-lost=no \
	    --suppressions=test/valgrind.supp \
	    --errors-for-leak-kinds=definite \
	    ./$$t >/dev/null; done; echo "valgrind: the unit tests are clean"

# ---------------------------------------------------------------- fuzzing
# libFuzzer targets: each links the library (and the daemon's flag parser)
# from source, instrumented. Corpora grow under test/fuzz/corpus/.
FUZZ_CC     ?= clang
FUZZ_TIME   ?= 600
FUZZ_SRC    := $(sort $(wildcard test/fuzz/fuzz_*.c))
FUZZ_BIN    := $(FUZZ_SRC:.c=)
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
               -fsanitize=fuzzer,address,undefined $(INTERNAL_INC) $(EXPERIMENTAL) \
               -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION

fuzz:
	@tools/deps fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

$(FUZZ_BIN): test/fuzz/%: test/fuzz/%.c test/fuzz/fuzz_util.h $(LIB_SRC) \
             include/qgm.h $(JOB_SRC) $(wildcard job/*.h)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRC) $(JOB_SRC) $(LIB_LIBS)

# Seeds: valid files (test/fuzz/seeds/KIND) and the bad-input corpus
# (test/bad-inputs/KIND*: cifar takes cifar10/ and cifar100/).
fuzz-run: fuzz
	@for t in checkpoint:checkpoint flagfile:flags idx:labels \
	          topology:topology cifar:cifar; do \
	  name=$${t%%:*}; seeds=$$(echo test/bad-inputs/$${t#*:}*); \
	  mkdir -p test/fuzz/corpus/$$name; \
	  echo "== fuzz_$$name for $(FUZZ_TIME) s"; \
	  nice -n 19 test/fuzz/fuzz_$$name -max_total_time=$(FUZZ_TIME) \
	    -print_final_stats=1 test/fuzz/corpus/$$name \
	    test/fuzz/seeds/$${t#*:} $$seeds || exit 1; done

# ---------------------------------------------------------------- main job
RUN_FLAGS := --algorithm=qg-dsgdm-n --topology=ring --alpha=1 --epochs=5 \
             --metrics=results/run.jsonl

run: deps
	@$(MAKE) --no-print-directory $(DAEMON) $(TOOL_BIN) $(SIM)
	@mkdir -p results
	$(MPIRUN) -np $(NP) $(DAEMON) $(RUN_FLAGS)

# ---------------------------------------------------------------- benchmarks
bench-loop: $(DAEMON)
	bench/loop.sh

BENCH_STEPS ?= 300

bench/bench_models: bench/bench_models.c $(STATIC_LIB)
	$(CC) $(CFLAGS) $(STREAM_CFLAGS) $(EXPERIMENTAL) $(PUBLIC_INC) -o $@ $< $(STATIC_LIB) $(LIB_LIBS)

# PyTorch is large and only the benchmark needs it, so `make deps` leaves it
# out; this target installs it (as root) when it is missing.
bench-models: deps bench/bench_models
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || { \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "bench-models needs: sudo apt-get install -y python3-torch" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-torch; }
	bench/models.sh $(BENCH_STEPS)

# The whole job on this machine: qgmd against a PyTorch peer on loopback,
# with the floor of the job's GEMM work (bench/epoch.sh).
bench-epoch: deps $(DAEMON) bench/bench_models
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || { \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "bench-epoch needs: sudo apt-get install -y python3-torch" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-torch; }
	bench/epoch.sh

# Across emulated hosts (root): all-reduce against decentralized training
# and PyTorch peers (a gossip ring; DDP with no hook, fp16 and PowerSGD) on
# shaped links; docs/CLUSTER.md has the results.
bench-cluster: deps $(DAEMON) $(TOOL_BIN)
	@/usr/bin/python3 -c 'import torch' 2>/dev/null || { \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "bench-cluster needs: sudo apt-get install -y python3-torch" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-torch; }
	bench/cluster.sh

# ---------------------------------------------------------------- sweeps
# The paper's comparison on Fashion-MNIST (examples/fmnist-heterogeneity):
# resumable, so an interrupted `make reproduce` continues where it stopped.
# The hard-heterogeneity grid of docs/RESULTS.md, in the order it is worth
# running in: every spec's runs before the next spec's, resumable.
REPRO_DIR   ?= results/hard
REPRO_SPECS := $(addprefix examples/hard-heterogeneity/, \
                 tree16.grid ring16.grid ring16-seeds45.grid lr16.grid \
                 tree16-lr.grid ring16-lenet.grid chain16.grid gut16-scaling.grid \
                 gut16.grid gut16-lr.grid social32-lr.grid ring16-baselines.grid \
                 trees16-gossip.grid social32.grid gut-lenet16.grid \
                 gut-lenet16-lr.grid gut-lenet16-tuned.grid \
                 gut-lenet16-lr-alpha01.grid gut-lenet16-tuned-alpha01.grid \
                 gut-lenet16-scaling-alpha01.grid rounds16-lr.grid \
                 rounds16-lenet-lr.grid rounds16-lenet-lr-alpha001.grid \
                 rounds16-lenet-lr-fine-alpha001.grid \
                 rounds16-lenet-scaling-alpha001.grid \
                 rounds16.grid rounds16-lenet.grid \
                 chebyshev16-lr.grid chebyshev16-lenet-lr.grid chebyshev16.grid \
                 gut-social32.grid gut-social32-lenet.grid \
                 gut-social32-lenet-lr.grid gut-social32-lenet-lazy-lr.grid \
                 gut-social32-lenet-lr-low.grid gut-social32-lenet-tuned.grid \
                 gut-social32-lenet-tuned-alpha01.grid rounds-social32.grid \
                 rounds-social32-lenet-lr.grid rounds-social32-lenet.grid \
                 rounds-social32-others.grid rounds-social32-lenet8.grid)
SWEEP_FLAGS ?=

reproduce: deps
	@$(MAKE) --no-print-directory $(DAEMON)
	tools/sweep -o $(REPRO_DIR) $(SWEEP_FLAGS) $(REPRO_SPECS)

# ---------------------------------------------------------------- quality
# The boundaries of docs/DESIGN.md that the include path alone does not
# keep (tools/layer-check, one rule per boundary, each violation named):
# only include/qgm.h of the library outside it, no daemon header in the
# tools and benchmarks, no MPI, libuv or daemon header in the job layer,
# no MPI, libuv, printing or exit in libqgm, and no gossip node or
# exchange in the asynchronous mode. LAYER_ROOT: the tree to check.
LAYER_ROOT  ?= .
layer-check:
	@tools/layer-check $(LAYER_ROOT)

# Every header compiles alone; qgm.h, the installed one, both with and
# without its experimental section, and a second include adds the section
# to a file that included qgm.h without it.
header-check:
	@for flag in "" $(EXPERIMENTAL); do \
	  echo '#include "qgm.h"' | $(CC) $(CFLAGS) $$flag $(PUBLIC_INC) -x c -fsyntax-only - || exit 1; done
	@! printf '#include "qgm.h"\nvoid g(void) { (void)qgm_matmul; }\n' | \
	  $(CC) $(CFLAGS) $(PUBLIC_INC) -x c -fsyntax-only - 2>/dev/null || \
	  { echo "header-check: qgm.h declares its experimental section without QGM_STATIC_LINKING_ONLY" >&2; exit 1; }
	@printf '#include "qgm.h"\n#define QGM_STATIC_LINKING_ONLY\n#include "qgm.h"\nvoid g(void) { (void)qgm_matmul; }\n' | \
	  $(CC) $(CFLAGS) $(PUBLIC_INC) -x c -fsyntax-only -
	@for h in $(wildcard libqgm/*/*.h); do \
	  echo "#include \"$$h\"" | $(CC) $(CFLAGS) $(EXPERIMENTAL) $(INTERNAL_INC) -x c -fsyntax-only - || exit 1; done
	@for h in daemon/*.h; do \
	  echo "#include \"$$h\"" | $(CC) $(CFLAGS) $(EXPERIMENTAL) $(MPI_CFLAGS) $(PUBLIC_INC) -Ijob -x c -fsyntax-only - || exit 1; done
	@for h in job/*.h tools/sim/*.h; do \
	  echo "#include \"$$h\"" | $(CC) $(CFLAGS) $(PUBLIC_INC) -Ijob -x c -fsyntax-only - || exit 1; done
	@echo "headers compile on their own (qgm.h with and without QGM_STATIC_LINKING_ONLY)"

cppcheck:
	cppcheck --quiet --error-exitcode=1 --enable=warning,style,performance,portability \
	  --inline-suppr --suppress=missingIncludeSystem $(INTERNAL_INC) -Ijob libqgm job daemon tools test

# ---------------------------------------------------------------- install
# Written at every make: it names PREFIX, which may differ from the last
# install's, and the version of include/qgm.h.
libqgm/libqgm.pc: libqgm/libqgm.pc.in FORCE
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@
FORCE:

# The daemon's man page lists the flags its --help prints.
MAN_QGMD    := docs/man/qgmd.1
$(MAN_QGMD): docs/man/qgmd.1.in docs/man/flags.awk $(DAEMON)
	./$(DAEMON) --help | awk -f docs/man/flags.awk > $@.flags
	sed -e 's|@VERSION@|$(VERSION)|' -e '/@FLAGS@/{r $@.flags' -e 'd}' $< > $@
	rm -f $@.flags

# The scripts live in PREFIX/share/qgmd/tools beside their shared module
# (and the sweep beside its library); PREFIX/bin links to them.
SHARE       := $(DESTDIR)$(PREFIX)/share/qgmd
MAN1        := $(DESTDIR)$(PREFIX)/share/man/man1
SCRIPTS     := qgm-plot qgm-trace-merge qgm-cluster qgm-slurm qgm-run qgm-data
TOOL_PAGES  := qgmctl qgm-plot qgm-topo qgm-inspect qgm-sim qgm-trace-merge qgm-sweep \
               qgm-cluster qgm-run qgm-data

install: all libqgm/libqgm.pc $(MAN_QGMD)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(DAEMON) $(DESTDIR)$(PREFIX)/bin/qgmd
	install -m 755 $(TOOL_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(SIM) $(DESTDIR)$(PREFIX)/bin/qgm-sim
	install -d $(SHARE)/tools/sweeplib $(SHARE)/topologies $(MAN1)
	install -m 755 $(addprefix tools/,$(SCRIPTS) sweep) $(SHARE)/tools/
	install -m 644 tools/qgmtool.py tools/mpi.env $(SHARE)/tools/
	install -m 644 tools/sweeplib/*.py $(SHARE)/tools/sweeplib/
	for s in $(SCRIPTS); do ln -sf ../share/qgmd/tools/$$s $(DESTDIR)$(PREFIX)/bin/$$s; done
	printf '#!/bin/sh\n# The installed sweep, with the installed daemon.\nQGMD="$${QGMD:-%s}" exec %s "$$@"\n' \
	  '$(PREFIX)/bin/qgmd' '$(PREFIX)/share/qgmd/tools/sweep' > $(DESTDIR)$(PREFIX)/bin/qgm-sweep
	chmod 755 $(DESTDIR)$(PREFIX)/bin/qgm-sweep
	install -m 644 topologies/* $(SHARE)/topologies/
	cp -R examples $(SHARE)/
	install -m 644 $(MAN_QGMD) docs/man/qgm-tools.1 $(MAN1)/
	for p in $(TOOL_PAGES); do ln -sf qgm-tools.1 $(MAN1)/$$p.1; done
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libqgm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libqgm.so.$(SOVERSION)
	ln -sf libqgm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libqgm.so
	install -m 644 include/qgm.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 libqgm/libqgm.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/qgmd $(DESTDIR)$(PREFIX)/bin/qgmctl \
	  $(DESTDIR)$(PREFIX)/bin/qgm-trace-merge $(DESTDIR)$(PREFIX)/bin/qgm-sim \
	  $(DESTDIR)$(PREFIX)/bin/qgm-topo $(DESTDIR)$(PREFIX)/bin/qgm-inspect \
	  $(DESTDIR)$(PREFIX)/bin/qgm-plot $(DESTDIR)$(PREFIX)/bin/qgm-sweep \
	  $(DESTDIR)$(PREFIX)/bin/qgm-cluster $(DESTDIR)$(PREFIX)/bin/qgm-slurm \
	  $(DESTDIR)$(PREFIX)/bin/qgm-run $(DESTDIR)$(PREFIX)/bin/qgm-data \
	  $(DESTDIR)$(PREFIX)/include/qgm.h \
	  $(DESTDIR)$(PREFIX)/lib/libqgm.* $(DESTDIR)$(PREFIX)/lib/pkgconfig/libqgm.pc \
	  $(MAN1)/qgmd.1 $(MAN1)/qgm-tools.1 $(addprefix $(MAN1)/,$(addsuffix .1,$(TOOL_PAGES)))
	rm -rf $(SHARE)

clean:
	rm -f libqgm/*/*.o libqgm/*/*.d libqgm/*.a libqgm/*.so* libqgm/libqgm.pc \
	  daemon/*.o daemon/*.d job/*.o job/*.d $(REVISION_INC) $(DAEMON) $(TOOL_BIN) tools/*.d $(SOCIAL_INC) test/*.o test/*.d \
	  $(UNIT_BIN) $(MPI_TEST_BIN) $(FAULT_TEST_BIN) tools/sim/*.o tools/sim/*.d $(SIM) $(BENCH_OPTIM) \
	  bench/bench_models bench/*.d $(FUZZ_BIN) $(MAN_QGMD)

-include $(wildcard libqgm/*/*.d daemon/*.d job/*.d tools/*.d test/*.d tools/sim/*.d bench/*.d)
