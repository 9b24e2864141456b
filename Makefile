# qgmd - decentralized training daemon.  `make help` lists the targets.

PREFIX      ?= /usr/local
CC          ?= gcc
MPICC       ?= mpicc
NP          ?= 8
SANITIZE    ?=

VERSION     := 0.1.0
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

# Open MPI: shared memory between local ranks, loopback for the runtime,
# yield instead of spinning when idle (ranks outnumber cores here).
export OMPI_MCA_pml                  := ob1
export OMPI_MCA_btl                  := self,vader
export OMPI_MCA_oob_tcp_if_include   := lo
export OMPI_MCA_btl_tcp_if_include   := lo
export OMPI_MCA_mpi_yield_when_idle  := 1
export OMPI_MCA_rmaps_base_oversubscribe := 1
export BLIS_NUM_THREADS              := 1
export OMP_NUM_THREADS               := 1
ifeq ($(shell id -u),0)
export OMPI_ALLOW_RUN_AS_ROOT         := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
endif
MPIRUN      := mpirun --bind-to none

LIB_SRC     := $(sort $(wildcard libqgm/*.c))
LIB_OBJ     := $(LIB_SRC:.c=.o)
DAEMON_SRC  := $(sort $(wildcard daemon/*.c))
DAEMON_OBJ  := $(DAEMON_SRC:.c=.o)
UNIT_SRC    := $(sort $(wildcard test/unit_*.c))
UNIT_BIN    := $(UNIT_SRC:.c=)
TOOL_SRC    := $(sort $(wildcard tools/*.c))
TOOL_BIN    := $(TOOL_SRC:.c=)
MPI_TEST_SRC := $(sort $(wildcard test/mpi_*.c))
MPI_TEST_BIN := $(MPI_TEST_SRC:.c=)
TEST_HELPER := test/helpers.o

STATIC_LIB  := libqgm/libqgm.a
SHARED_LIB  := libqgm/libqgm.so.$(VERSION)
DAEMON      := daemon/qgmd

.PHONY: all deps run check unit-check mpi-check install uninstall clean help \
        header-check cppcheck bench-loop fuzz fuzz-run valgrind

all: $(STATIC_LIB) $(SHARED_LIB) $(DAEMON) $(TOOL_BIN) $(UNIT_BIN) $(MPI_TEST_BIN)

help:
	@echo "make            build libqgm (.a and .so), daemon/qgmd and the tests"
	@echo "make deps       install the Debian packages qgmd needs (as root)"
	@echo "make run        deps + build + train the main job (NP=$(NP) ranks, ring)"
	@echo "make check      deps + build + every test (unit and MPI)"
	@echo "make install    install into PREFIX=$(PREFIX) (DESTDIR honoured)"
	@echo "make cppcheck   static analysis of the project's code"
	@echo "make valgrind   the unit tests under valgrind memcheck"
	@echo "make fuzz       build the libFuzzer targets (clang; not part of check)"
	@echo "make fuzz-run   run each fuzz target FUZZ_TIME=$(FUZZ_TIME) s, niced"
	@echo "make check SANITIZE=address,undefined   everything under ASan+UBSan"

deps:
	@tools/deps

# ---------------------------------------------------------------- library
$(LIB_OBJ): %.o: %.c
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

$(STATIC_LIB): $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libqgm.so.$(SOVERSION) $(LDSAN) -o $@ $^ $(LIB_LIBS)
	ln -sf libqgm.so.$(VERSION) libqgm/libqgm.so.$(SOVERSION)
	ln -sf libqgm.so.$(VERSION) libqgm/libqgm.so

# ---------------------------------------------------------------- daemon
$(DAEMON_OBJ): %.o: %.c
	$(CC) $(CFLAGS) $(MPI_CFLAGS) -Ilibqgm -c $< -o $@

$(DAEMON): $(DAEMON_OBJ) $(STATIC_LIB)
	$(CC) $(LDSAN) -o $@ $(DAEMON_OBJ) $(STATIC_LIB) $(MPI_LIBS) $(UV_LIBS) $(LIB_LIBS)

# ---------------------------------------------------------------- tools
$(TOOL_BIN): tools/%: tools/%.c $(STATIC_LIB)
	$(CC) $(CFLAGS) -Ilibqgm -o $@ $< $(STATIC_LIB) $(LDSAN) $(LIB_LIBS)

# ---------------------------------------------------------------- tests
$(TEST_HELPER): test/helpers.c test/helpers.h
	$(CC) $(CFLAGS) -Ilibqgm -c $< -o $@

test/%: test/%.c $(TEST_HELPER) $(STATIC_LIB)
	$(CC) $(CFLAGS) -Ilibqgm -o $@ $< $(TEST_HELPER) $(STATIC_LIB) $(LDSAN) -lcmocka $(LIB_LIBS)

unit-check: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; ./$$t; done

mpi-check: $(DAEMON) $(TOOL_BIN) $(MPI_TEST_BIN)
	@set -e; for t in $(MPI_TEST_BIN); do echo "== $$t"; ./$$t; done

check: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory unit-check
	@$(MAKE) --no-print-directory mpi-check
	@echo "make check: all tests passed"

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
               -fsanitize=fuzzer,address,undefined -Ilibqgm \
               -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION

fuzz:
	@tools/deps fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

$(FUZZ_BIN): test/fuzz/%: test/fuzz/%.c test/fuzz/fuzz_util.h $(LIB_SRC) \
             libqgm/qgm.h daemon/config.c daemon/config.h
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRC) daemon/config.c $(LIB_LIBS)

# Seeds: valid files (test/fuzz/seeds/) and the bad-input corpus.
fuzz-run: fuzz
	@for t in checkpoint:checkpoint flagfile:flags idx:labels; do \
	  name=$${t%%:*}; seeds=test/bad-inputs/$${t#*:}; \
	  mkdir -p test/fuzz/corpus/$$name; \
	  echo "== fuzz_$$name for $(FUZZ_TIME) s"; \
	  nice -n 19 test/fuzz/fuzz_$$name -max_total_time=$(FUZZ_TIME) \
	    -print_final_stats=1 test/fuzz/corpus/$$name \
	    test/fuzz/seeds/$${t#*:} $$seeds || exit 1; done

# ---------------------------------------------------------------- main job
RUN_FLAGS := --algorithm=qg-dsgdm-n --topology=ring --alpha=1 --epochs=5 \
             --metrics=results/run.jsonl

run: deps
	@$(MAKE) --no-print-directory $(DAEMON)
	@mkdir -p results
	$(MPIRUN) -np $(NP) $(DAEMON) $(RUN_FLAGS)

# ---------------------------------------------------------------- benchmarks
bench-loop: $(DAEMON)
	bench/loop.sh

# ---------------------------------------------------------------- quality
header-check:
	@for h in libqgm/qgm.h daemon/*.h; do \
	  echo "#include \"$$h\"" | $(CC) $(CFLAGS) $(MPI_CFLAGS) -Ilibqgm -x c -fsyntax-only - || exit 1; done
	@echo "headers compile on their own"

cppcheck:
	cppcheck --quiet --error-exitcode=1 --enable=warning,style,performance,portability \
	  --inline-suppr --suppress=missingIncludeSystem -Ilibqgm libqgm daemon tools test

# ---------------------------------------------------------------- install
libqgm/libqgm.pc: libqgm/libqgm.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

install: all libqgm/libqgm.pc
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(DAEMON) $(DESTDIR)$(PREFIX)/bin/qgmd
	install -m 755 tools/qgmctl tools/qgm-trace-merge tools/qgm-inspect $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libqgm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libqgm.so.$(SOVERSION)
	ln -sf libqgm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libqgm.so
	install -m 644 libqgm/qgm.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 libqgm/libqgm.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/qgmd $(DESTDIR)$(PREFIX)/bin/qgmctl \
	  $(DESTDIR)$(PREFIX)/bin/qgm-trace-merge $(DESTDIR)$(PREFIX)/bin/qgm-inspect \
	  $(DESTDIR)$(PREFIX)/include/qgm.h \
	  $(DESTDIR)$(PREFIX)/lib/libqgm.* $(DESTDIR)$(PREFIX)/lib/pkgconfig/libqgm.pc

clean:
	rm -f libqgm/*.o libqgm/*.d libqgm/*.a libqgm/*.so* libqgm/libqgm.pc \
	  daemon/*.o daemon/*.d $(DAEMON) $(TOOL_BIN) tools/*.d test/*.o test/*.d $(UNIT_BIN) $(MPI_TEST_BIN) \
	  $(FUZZ_BIN)

-include $(wildcard libqgm/*.d daemon/*.d tools/*.d test/*.d)
