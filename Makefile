# mprof: `make` builds the monitor and the example; `make demo` and
# `make check` also do all set-up (Debian packages, a project-local venv).

PREFIX ?= /usr/local
DESTDIR ?=
BUILD := build
PYTHON ?= python3
VENV := .venv

# What building and testing need from Debian.
SYSTEM_PACKAGES := gcc g++ make pkg-config libunwind-dev libdw-dev libiberty-dev libzstd-dev zlib1g-dev libsqlite3-dev python3 python3-venv
# The allocators mprof replay compares with glibc's.
REPLAY_PACKAGES := libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0
# chromium and its driver: the HTML report's tests open its pages in a real browser;
# strace: a test checks which descriptors the monitor writes through;
# libpython3.11-testsuite: CPython's own tests, run with and without mprof;
# rustc: Rust programs built in both symbol manglings, for the names.
TEST_PACKAGES := valgrind gawk perl sqlite3 chromium chromium-driver strace libpython3.11-testsuite rustc tmux

CC ?= cc
CFLAGS ?= -O2 -g
MONITOR_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC \
	-fvisibility=hidden -ftls-model=initial-exec -fasynchronous-unwind-tables \
	-fno-strict-aliasing $(shell pkg-config --cflags libunwind 2>/dev/null)
MONITOR_LIBS := -lunwind -lzstd -lz -ldl -lpthread

MONITOR_SOURCES := $(wildcard monitor/*.c)
MONITOR_OBJECTS := $(MONITOR_SOURCES:monitor/%.c=$(BUILD)/monitor/%.o)

.PHONY: all demo replay-demo check test test-fast fuzz bench install clean setup setup-test venv mutate
all: $(BUILD)/libmprof.so $(BUILD)/libmprof.a $(BUILD)/widgets $(BUILD)/mprof-resolve $(BUILD)/libmprof-reduce.so \
	$(BUILD)/mprof-replay $(BUILD)/mprof-inject $(BUILD)/libmprof-inject.so \
	$(BUILD)/.bytecode

# ./mprof's modules compiled once, by the interpreter it runs (the venv's,
# else python3), so that no start of it compiles them: where
# PYTHONDONTWRITEBYTECODE is set, none would ever be cached, and compiling
# what mprof run imports takes longer than the rest of its start.  The web
# page's templates are kept compiled in build/templates by the first page.
$(BUILD)/.bytecode: $(wildcard src/mprof/*.py src/mprof/*/*.py) | $(BUILD)/.system-packages
	python=$(VENV)/bin/python3; [ -x $$python ] || python=$(PYTHON); $$python -m compileall -q src/mprof
	@mkdir -p $(BUILD)/templates && touch $@

$(BUILD)/.system-packages: Makefile scripts/setup-system.sh
	./scripts/setup-system.sh $(SYSTEM_PACKAGES)
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/.test-packages: Makefile scripts/setup-system.sh
	./scripts/setup-system.sh $(TEST_PACKAGES) $(REPLAY_PACKAGES)
	@mkdir -p $(BUILD) && touch $@

# What the exports are tested with: go tool pprof, inferno-flamegraph.
$(BUILD)/tools/.installed: scripts/setup-tools.sh | $(BUILD)/.system-packages
	./scripts/setup-tools.sh $(BUILD)/tools
	touch $@

# The profiling server mprof's pushes are tested against (scripts/setup-pyroscope.sh).
$(BUILD)/tools/pyroscope: scripts/setup-pyroscope.sh | $(BUILD)/.system-packages
	./scripts/setup-pyroscope.sh $(BUILD)/tools

# mprof itself goes in editable: the console script .venv/bin/mprof, and
# `import mprof` from any directory, run the tree's src/.  Its module for
# pprof's profile.proto is generated first (see scripts/pprof_proto.py).
$(VENV)/.installed: requirements-dev.txt pyproject.toml scripts/pprof_proto.py | $(BUILD)/.system-packages
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(VENV)/bin/python scripts/pprof_proto.py src/mprof/export $(BUILD)/pprof
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	$(VENV)/bin/python -m compileall -q src/mprof
	touch $@

setup: $(BUILD)/.system-packages
venv: $(VENV)/.installed

$(BUILD)/monitor/%.o: monitor/%.c $(wildcard monitor/*.h) | $(BUILD)/.system-packages
	@mkdir -p $(dir $@)
	$(CC) $(MONITOR_CFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/libmprof.so: $(MONITOR_OBJECTS)
	$(CC) -shared -Wl,--no-undefined -Wl,-soname,libmprof.so -o $@ $^ $(MONITOR_LIBS)

$(BUILD)/libmprof.a: $(MONITOR_OBJECTS)
	rm -f $@ && ar rcs $@ $^

# The reducer's libdw resolver; libiberty demangles C++ and Rust names.
$(BUILD)/mprof-resolve: $(wildcard resolve/*.c resolve/*.h) | $(BUILD)/.system-packages
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(CFLAGS) $(shell pkg-config --cflags libdw 2>/dev/null) \
		-o $@ $(filter %.c,$^) $(shell pkg-config --libs libdw 2>/dev/null || echo -ldw -lelf) -liberty

# The reducer's loops over call path trees, which it loads with ctypes.
$(BUILD)/libmprof-reduce.so: $(wildcard reduce/*.c reduce/*.h) | $(BUILD)/.system-packages
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(CFLAGS) -fPIC -fvisibility=hidden -shared \
		-o $@ $(filter %.c,$^) -lsqlite3 -pthread

# Plays a trace back against an allocator (see mprof(1), mprof replay).
$(BUILD)/mprof-replay: $(wildcard replayer/*.c replayer/*.h) | $(BUILD)/.system-packages
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(CFLAGS) -pthread -o $@ $(filter %.c,$^) -lzstd -ldl

# Loads the monitor into a running process for mprof attach (inject/inject.c),
# through the helper library it loads there first (inject/helper.c).
$(BUILD)/mprof-inject: $(filter-out inject/helper.c,$(wildcard inject/*.c)) $(wildcard inject/*.h) \
		| $(BUILD)/.system-packages
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(CFLAGS) -o $@ $(filter %.c,$^) -ldl

$(BUILD)/libmprof-inject.so: inject/helper.c inject/request.h | $(BUILD)/.system-packages
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(CFLAGS) -fPIC -fvisibility=hidden -shared \
		-Wl,--no-undefined -o $@ $< -ldl

# -O0 keeps the paper's four functions apart, as the figures show them.
$(BUILD)/widgets: examples/widgets.c | $(BUILD)/.system-packages
	@mkdir -p $(BUILD)
	$(CC) -O0 -g -o $@ $<

demo: all $(VENV)/.installed
	./mprof run -o $(BUILD)/widgets.mprof -- $(BUILD)/widgets
	./mprof report --no-pager $(BUILD)/widgets.mprof
	./mprof html $(BUILD)/widgets.mprof -o $(BUILD)/widgets.html
	@echo "mprof: wrote the HTML report $(BUILD)/widgets.html"

# A real program's trace replayed against glibc's allocator, jemalloc,
# tcmalloc and mimalloc (see mprof(1), mprof replay).
$(BUILD)/.replay-packages: Makefile scripts/setup-system.sh
	./scripts/setup-system.sh $(REPLAY_PACKAGES)
	@mkdir -p $(BUILD) && touch $@

replay-demo: all $(VENV)/.installed $(BUILD)/.replay-packages
	./mprof run --trace --quiet -o $(BUILD)/widgets.mprof -- $(BUILD)/widgets
	./mprof replay $(BUILD)/widgets.mprof.trace

# The tests run in a process per core (pytest-xdist), each module whole in
# one of them, the longest modules first (tests/conftest.py).  TIERED are the
# markers (pyproject.toml) of what needs a browser, valgrind, a server, Go
# or Rust, or takes long: make test-fast, for the daily loop, leaves them
# out; make check runs everything and names the 20 slowest tests.
TEST_WORKERS ?= auto
PYTEST := $(VENV)/bin/python -m pytest -q -rs -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
TIERED := browser or valgrind or server or go or rust or slow or fuzz

check test: all $(VENV)/.installed $(BUILD)/.test-packages $(BUILD)/tools/.installed $(BUILD)/tools/pyroscope
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/mypy
	$(PYTEST) --durations=20 tests

test-fast: all $(VENV)/.installed $(BUILD)/.test-packages
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/mypy
	$(PYTEST) -m "not ($(TIERED))" tests

# The fuzzers of tests/fuzz/ on FUZZ_INPUTS inputs each, however long that
# takes (make check runs each for a minute).
FUZZ_INPUTS ?= 10000
fuzz: all $(VENV)/.installed $(BUILD)/.test-packages
	MPROF_FUZZ_INPUTS=$(FUZZ_INPUTS) $(PYTEST) -m fuzz tests

# Mutation testing, on demand (not part of check): mutmut over the reducer,
# the reports, the push and the live view (settings in pyproject.toml); then
# every mutant of the monitor's and mprof-inject's files that
# tests/mutate/c_tests.py names, each against its own file's tests,
# MUTATE_JOBS at a time (a few hours on two cores; the verdicts go to
# $(BUILD)/mutate-named.log as they come, and a stopped run resumes from
# it); then MONITOR_MUTANTS mutants drawn from the rest of monitor/, all by
# tests/mutate/mutate_monitor.py.  mutmut's results stay in mutants/
# (`.venv/bin/mutmut results`, `mutmut show NAME`).
MONITOR_MUTANTS ?= 60
MUTATE_JOBS ?= 2
$(VENV)/.mutmut: requirements-mutate.txt $(VENV)/.installed
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-mutate.txt
	touch $@

mutate: all $(VENV)/.mutmut $(BUILD)/.test-packages
	rm -rf mutants && mkdir mutants && ln -s ../$(VENV) mutants/$(VENV)
	$(VENV)/bin/mutmut run > $(BUILD)/mutmut.log 2>&1 || (tail -c 2000 $(BUILD)/mutmut.log; exit 1)
	status=0; \
	$(VENV)/bin/python tests/mutate/mutate_monitor.py --named --jobs $(MUTATE_JOBS) --log $(BUILD)/mutate-named.log \
		|| status=1; \
	$(VENV)/bin/python tests/mutate/mutate_monitor.py --limit $(MONITOR_MUTANTS) --jobs $(MUTATE_JOBS) || status=1; \
	$(VENV)/bin/python tests/mutate/mutmut_summary.py || status=1; \
	exit $$status

# Measures mprof against no profiler, heaptrack and two floors, what mprof
# run adds to a program's start, and what the reducer and the reports cost on
# cc1plus's profile and on one of a million call paths (see bench/run.py,
# bench/startup.py, bench/reduction.py).
BENCH_PACKAGES := heaptrack valgrind gawk perl sqlite3 python3
BENCH_PROGRAMS := $(BUILD)/bench/floor-noop.so $(BUILD)/bench/floor-backtrace.so \
	$(BUILD)/bench/widgets_deep $(BUILD)/bench/widgets_threads $(BUILD)/bench/wide_tree \
	$(BUILD)/bench/objects $(BUILD)/bench/objects_annotated $(BUILD)/bench/objects_malloc \
	$(BUILD)/bench/leak_graph

$(BUILD)/.bench-packages: Makefile scripts/setup-system.sh
	./scripts/setup-system.sh $(BENCH_PACKAGES)
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/bench/floor-%.so: bench/floors/%.c bench/floors/forward.h | $(BUILD)/.system-packages
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -shared -fPIC -o $@ $< -ldl -lunwind

# -O2 like real programs; noinline keeps the call chains what they claim.
$(BUILD)/bench/%: bench/programs/%.c | $(BUILD)/.system-packages
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -pthread -o $@ $<

$(BUILD)/bench/objects_annotated: bench/programs/objects.c monitor/mprof.h | $(BUILD)/.system-packages
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -DANNOTATE -Imonitor -o $@ $<

$(BUILD)/bench/objects_malloc: bench/programs/objects.c | $(BUILD)/.system-packages
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -DEDGES_FROM_MALLOC -o $@ $<

bench: all $(VENV)/.installed $(BUILD)/.bench-packages $(BENCH_PROGRAMS)
	$(VENV)/bin/python bench/run.py $(if $(QUICK),--quick)

# The Python package goes, with Jinja2, into a directory of mprof's own
# that bin/mprof puts on its module path: nothing of the system's python3
# is changed or needed beyond the interpreter.
install: all $(VENV)/.installed
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/lib/mprof/python $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man3 \
		$(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(BUILD)/libmprof.so $(DESTDIR)$(PREFIX)/lib/libmprof.so
	install -m 644 $(BUILD)/libmprof.a $(DESTDIR)$(PREFIX)/lib/libmprof.a
	install -d $(DESTDIR)$(PREFIX)/lib/mprof
	install -m 755 $(BUILD)/mprof-resolve $(DESTDIR)$(PREFIX)/lib/mprof/mprof-resolve
	install -m 755 $(BUILD)/libmprof-reduce.so $(DESTDIR)$(PREFIX)/lib/mprof/libmprof-reduce.so
	install -m 755 $(BUILD)/mprof-replay $(DESTDIR)$(PREFIX)/lib/mprof/mprof-replay
	install -m 755 $(BUILD)/mprof-inject $(DESTDIR)$(PREFIX)/lib/mprof/mprof-inject
	install -m 755 $(BUILD)/libmprof-inject.so $(DESTDIR)$(PREFIX)/lib/mprof/libmprof-inject.so
	for pc in mprof mprof-static; do \
		sed -e 's|@PREFIX@|$(PREFIX)|g' $$pc.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/$$pc.pc; \
	done
	install -m 644 monitor/mprof.h $(DESTDIR)$(PREFIX)/include/mprof.h
	install -m 644 monitor/mprof_valgrind.h $(DESTDIR)$(PREFIX)/include/mprof_valgrind.h
	rm -rf $(DESTDIR)$(PREFIX)/lib/mprof/python $(BUILD)/python
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-compile \
		--target $(DESTDIR)$(PREFIX)/lib/mprof/python .
	rm -rf $(DESTDIR)$(PREFIX)/lib/mprof/python/bin
	sed -e 's|@PYROOT@|$(PREFIX)/lib/mprof/python|g' -e 's|@LIBDIR@|$(PREFIX)/lib|g' \
		-e 's|@RESOLVE@|$(PREFIX)/lib/mprof/mprof-resolve|g' \
		-e 's|@REDUCE@|$(PREFIX)/lib/mprof/libmprof-reduce.so|g' \
		-e 's|@REPLAY@|$(PREFIX)/lib/mprof/mprof-replay|g' \
		-e 's|@INJECT@|$(PREFIX)/lib/mprof/mprof-inject|g' \
		scripts/mprof.installed.in > $(DESTDIR)$(PREFIX)/bin/mprof
	chmod 755 $(DESTDIR)$(PREFIX)/bin/mprof
	install -m 644 man/mprof.1 $(DESTDIR)$(PREFIX)/share/man/man1/mprof.1
	install -m 644 man/libmprof.3 $(DESTDIR)$(PREFIX)/share/man/man3/libmprof.3
	install -m 644 man/mprof.5 $(DESTDIR)$(PREFIX)/share/man/man5/mprof.5
	install -m 644 man/mprof-profile.5 $(DESTDIR)$(PREFIX)/share/man/man5/mprof-profile.5

clean:
	rm -rf $(BUILD)
