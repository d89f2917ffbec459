.PHONY: install test lint format docs run bench bench-quick corpus

install:
	python -m pip install -e ".[dev,train]"

test:
	ruff check src tests bench
	mypy
	python -m pytest -q

lint:
	ruff check src tests bench
	ruff format --check src tests bench
	mypy

format:
	ruff format src tests bench
	ruff check --fix src tests bench

docs:
	oopav events docs
	oopav streams export --out ops/nats
	oopav cluster config --out ops/cluster

run:
	oopav run --task examples/rename_fetch/task.json

# Re-record the replay corpus (tests/corpus/sessions) with the current code; commit the result.
corpus:
	python tests/corpus/record.py

# Every figure as the median of 5 runs with its spread, target and PASS/MISS (bench/_harness.py).
# BENCH_ARGS="--runs 3" to change the runs; `make bench-quick` is the smoke run CI does.
BENCH_ARGS ?=
bench:
	python bench/bus.py $(BENCH_ARGS)
	python bench/sandbox.py $(BENCH_ARGS)
	python bench/models.py --skip-context $(BENCH_ARGS)
	python bench/grammar.py $(BENCH_ARGS)
	python bench/context.py $(BENCH_ARGS)
	python bench/loop.py $(BENCH_ARGS)
	python bench/load.py --memory 1000 $(BENCH_ARGS)
	python bench/load.py --real-tests $(BENCH_ARGS)
	python bench/learner.py $(BENCH_ARGS)
	python bench/intake.py
	python bench/synth.py
	python bench/rewards.py
	python bench/learning.py --short
	python bench/history.py $(BENCH_ARGS)
	python bench/archive.py $(BENCH_ARGS)

bench-quick:
	$(MAKE) bench BENCH_ARGS=--quick
