# Entry points for people and CI. Everything goes through CMake in build/ (Release with assertions).
#   make demo  - install what is missing, build, compile and run the bundled example
#   make test  - install what is missing, build, run the whole test suite (unit + lit + corpus)
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=

.PHONY: all setup build demo test bench clean asan fuzz install

all: build

setup:
	@./scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) > /dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@./examples/run-demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# cmake --install: bin/uopc, bin/uopc-run, lib/uopc/libuopc-llvm.so, share/uopc/schemas, the docs
# (PREFIX=/usr/local by default; DESTDIR stages it elsewhere)
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	@./bench/run.sh $(BUILD)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer. LeakSanitizer's tracer crashes
# ("Tracer caught signal 11", about half the runs) scanning the thread-local storage of a dlopened libLLVM
# with GCC 12's sanitizer runtime on glibc 2.36; use_tls=0 skips that scan (leaks are still found, only
# pointers held in TLS no longer count as reachable). scripts/lsan.supp: glibc's own allocation for a library
# dlopened with RTLD_GLOBAL (the JIT's libmvec).
asan:
	@LSAN_OPTIONS=use_tls=0:suppressions=$(CURDIR)/scripts/lsan.supp $(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DUOPC_SANITIZE=ON"

# libFuzzer targets (fuzz/: the graph readers, reader + pipeline + C emission, the manifest parser and run
# set-up, the safetensors reader), built with clang 19 (Debian's clang 14 lacks C++20's source_location), ASan and UBSan in build-fuzz/, then each run for FUZZ_SECONDS (default 60).
FUZZ_SECONDS ?= 60
fuzz:
	@./scripts/setup.sh clang-19 libclang-rt-19-dev
	@CC=clang-19 CXX=clang++-19 cmake -S . -B build-fuzz -G Ninja -DUOPC_FUZZ=ON > /dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_read fuzz_pipeline fuzz_manifest fuzz_safetensors
	@./fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) build-asan build-fuzz
