.PHONY: install test lint format docs run bench

install:
	python -m pip install -e ".[dev,train]"

test:
	ruff check src tests bench
	python -m pytest -q

lint:
	ruff check src tests bench
	ruff format --check src tests bench

format:
	ruff format src tests bench
	ruff check --fix src tests bench

docs:
	oopav events docs
	oopav streams export --out ops/nats

run:
	oopav run --task examples/rename_fetch/task.json

bench:
	python bench/bus.py
	python bench/sandbox.py
	python bench/models.py
	python bench/context.py
	python bench/loop.py
	python bench/rewards.py
	python bench/learning.py --short
