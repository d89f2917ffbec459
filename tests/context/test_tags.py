"""Definitions and references extracted by the shipped tags queries, per language."""

from __future__ import annotations

import pytest

from oopav.context.tags import QUERY_FOR_LANGUAGE, extract_file_tags, extract_tags, tags_language


def defs(source: str, language: str) -> set[str]:
    return {t.name for t in extract_tags(source.encode(), language) if t.kind == "def"}


def refs(source: str, language: str) -> set[str]:
    return {t.name for t in extract_tags(source.encode(), language) if t.kind == "ref"}


PYTHON = """
from billing.core import compute_total, Money as M

RATE = 3

@cached
class Invoice(BaseModel):
    def total(self, items: Items) -> int:
        return compute_total(items) + self.helper.round_up(1)

def render(inv):
    return Invoice(inv)
"""


def test_python() -> None:
    assert defs(PYTHON, "python") == {"RATE", "Invoice", "total", "render"}
    assert {
        "compute_total",
        "Money",
        "cached",
        "BaseModel",
        "round_up",
        "Invoice",
        "Items",
    } <= refs(PYTHON, "python")


JAVASCRIPT = """
import { fetchUser } from './api';
export const LIMIT = 10;
class Cart extends Base {
  addItem(item) { return this.store.save(item); }
}
function checkout(cart) { return fetchUser(cart.owner); }
const total = (xs) => xs.length;
const c = new Cart();
"""


def test_javascript() -> None:
    assert defs(JAVASCRIPT, "javascript") >= {"LIMIT", "Cart", "addItem", "checkout", "total"}
    assert refs(JAVASCRIPT, "javascript") >= {"fetchUser", "Base", "save", "Cart"}


TYPESCRIPT = """
import { Client } from './client';
export interface Shape { size: number; area(): number; }
export type Id = string;
export enum Color { Red, Green }
export class Square implements Shape {
  constructor(private client: Client) {}
  area(): number { return compute(this.size); }
}
export function make(id: Id): Square { return new Square(new Client()); }
"""


@pytest.mark.parametrize("language", ["typescript", "tsx"])
def test_typescript_and_tsx(language: str) -> None:
    found = extract_tags(TYPESCRIPT.encode(), language)
    d = {t.name for t in found if t.kind == "def"}
    r = {t.name for t in found if t.kind == "ref"}
    assert d >= {"Shape", "Id", "Color", "Square", "area", "make"}
    assert r >= {"Client", "Shape", "Id", "compute", "Square"}
    # A definition's own name is not also a reference at the same spot.
    square_lines = {t.line for t in found if t.name == "Square" and t.kind == "ref"}
    square_def = next(t.line for t in found if t.name == "Square" and t.kind == "def")
    assert square_def not in square_lines


JAVA = """
package com.shop;
public class OrderService extends BaseService implements Handler {
    private Repository repo = new Repository();
    public Order place(Cart cart) { return repo.save(cart.toOrder()); }
}
interface Handler { void handle(); }
enum Status { OPEN, CLOSED }
"""


def test_java() -> None:
    assert defs(JAVA, "java") == {"OrderService", "place", "Handler", "handle", "Status"}
    assert refs(JAVA, "java") >= {
        "BaseService",
        "Handler",
        "Repository",
        "Order",
        "Cart",
        "save",
        "toOrder",
    }


GO = """
package shop

const MaxItems = 10

type Cart struct { Items []Item }
type Store interface { Save(c *Cart) error }

func NewCart() *Cart { return &Cart{} }
func (c *Cart) Add(i Item) { c.Items = append(c.Items, validate(i)); log.Printf("x") }
"""


def test_go() -> None:
    assert defs(GO, "go") == {"MaxItems", "Cart", "Store", "NewCart", "Add"}
    assert refs(GO, "go") >= {"Item", "Cart", "validate", "Printf", "append"}


RUST = """
use crate::store::Backend;
pub const LIMIT: usize = 3;
pub struct Cart { items: Vec<Item> }
pub enum State { Open, Closed }
pub trait Priced { fn price(&self) -> u32; }
macro_rules! shout { () => {} }
impl Priced for Cart {
    fn price(&self) -> u32 { total(&self.items) + self.fee() + Backend::lookup() }
}
pub fn main() { println!("hi"); }
"""


def test_rust() -> None:
    assert defs(RUST, "rust") >= {"LIMIT", "Cart", "State", "Priced", "price", "shout", "main"}
    assert refs(RUST, "rust") >= {
        "Backend",
        "Item",
        "Priced",
        "Cart",
        "total",
        "fee",
        "lookup",
        "println",
    }


def test_definition_lines_carry_their_code() -> None:
    tags = extract_tags(PYTHON.encode(), "python")
    total = next(t for t in tags if t.name == "total" and t.kind == "def")
    assert total.code == "    def total(self, items: Items) -> int:"
    assert total.line == PYTHON.split("\n").index(total.code)
    assert all(t.code == "" for t in tags if t.kind == "ref")


def test_languages_by_extension() -> None:
    assert tags_language("a/b.py") == "python"
    assert tags_language("x.tsx") == "tsx"
    assert tags_language("x.rs") == "rust"
    assert tags_language("README.md") is None
    assert tags_language("conf.json") is None  # parsed by oopav, but no definitions to map
    assert extract_file_tags("notes.txt", b"def f(): pass") == []
    assert set(QUERY_FOR_LANGUAGE) >= {"python", "javascript", "typescript", "java", "go", "rust"}


def test_broken_source_still_yields_what_parses() -> None:
    src = "def good():\n    pass\n\ndef broken(:\n"
    assert "good" in defs(src, "python")
