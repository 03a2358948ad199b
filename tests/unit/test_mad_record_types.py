"""The TypedDicts of ibsnmp.mad.records_generated: written by ibsnmp.sa.record_types from
every layout, named by each layout's declaration, and true to what decode returns."""

from __future__ import annotations

import ast
import random
import types
import typing

import pytest

from tests.unit.test_package_layers import PACKAGE_ROOT

from ibsnmp.mad import records_generated
from ibsnmp.mad.attributes import Attribute
from ibsnmp.mad.layout import AnyRecord, ArrayField, Field, Layout, OctetsField, TextField
from ibsnmp.sa import notices
from ibsnmp.sa.record_types import COMMAND, MODULES, declared_layouts, render, target
from ibsnmp.sa.records import SaAttribute

LAYOUTS = declared_layouts()


def test_the_generated_module_is_what_the_generator_writes_now() -> None:
    assert target() == PACKAGE_ROOT / "mad" / "records_generated.py"
    assert target().read_text() == render(LAYOUTS), f"a layout changed: run `make mad-records` ({COMMAND})"


def _declares_layouts(tree: ast.AST) -> bool:
    """Whether the source calls Layout(...) or Layout[...](...)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func.value if isinstance(node.func, ast.Subscript) else node.func
            if isinstance(called, ast.Name) and called.id == "Layout":
                return True
    return False


def test_every_module_declaring_layouts_is_read() -> None:
    declaring = {".".join(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
                 for path in sorted(PACKAGE_ROOT.rglob("*.py"))
                 if "compiled_mibs" not in path.parts
                 and _declares_layouts(ast.parse(path.read_text()))}
    assert declaring == {module.__name__ for module in MODULES}


def test_each_layout_is_declared_with_its_own_record() -> None:
    typed: set[str] = set()
    for module in MODULES:
        for name, hint in typing.get_type_hints(module).items():
            value = getattr(module, name)
            if isinstance(value, (Attribute, SaAttribute)):
                value = value.layout
            if isinstance(value, Layout):
                (record,) = typing.get_args(hint)
                assert record is getattr(records_generated, value.name), name
                typed.add(value.name)
    # The notices' details alone are read loosely: their fields differ from trap to trap.
    loose = {layout.name for layout in notices.DETAILS.values()}
    assert typed | loose == {layout.name for layout in LAYOUTS} and not typed & loose


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: layout.name)
def test_a_record_is_typed_as_decode_returns_it(layout: Layout[AnyRecord]) -> None:
    record = getattr(records_generated, layout.name)
    hints = typing.get_type_hints(record)
    assert list(hints) == [f.name for f in layout.fields]
    assert record.__required_keys__ == frozenset(hints)
    # The typed decode is the compiled decoder itself: typing costs nothing at run time.
    assert layout.decode is layout.decoder()
    values = layout.decode(random.Random(layout.name).randbytes(layout.size))
    assert list(values) == list(hints)
    for name, hint in hints.items():
        value = values[name]
        assert type(value) is (typing.get_origin(hint) or hint), name
        if isinstance(value, tuple):
            assert hint == tuple[int, ...] and all(type(v) is int for v in value), name


def test_field_names_that_are_no_python_names_take_the_functional_form() -> None:
    odd = Layout[AnyRecord]("Odd", 8, (Field("LID/Port", 0, 16), OctetsField("class", 16, 16),
                                        TextField("Name", 32, 16), ArrayField("Hops", 48, 16, count=2)))
    plain = Layout[AnyRecord]("Plain", 2, (Field("LID", 0, 16),))
    source = render([odd, plain])
    assert 'Odd = TypedDict("Odd", {' in source.replace("'", '"')
    assert "class Plain(TypedDict):" in source
    namespace: dict[str, object] = {}
    exec(source, namespace)
    assert typing.get_type_hints(namespace["Odd"]) == {
        "LID/Port": int, "class": bytes, "Name": str, "Hops": tuple[int, ...]}
    assert typing.get_type_hints(namespace["Plain"]) == {"LID": int}


def test_a_layout_whose_name_is_no_python_name_is_refused() -> None:
    with pytest.raises(ValueError, match="Python name"):
        render([Layout[AnyRecord]("Port Info", 2, (Field("LID", 0, 16),))])


def test_two_layouts_of_one_name_are_refused() -> None:
    module = types.ModuleType("twice")
    vars(module).update(A=Layout[AnyRecord]("Same", 2, (Field("LID", 0, 16),)),
                        B=Layout[AnyRecord]("Same", 2, (Field("PKey", 0, 16),)))
    with pytest.raises(ValueError, match="two layouts are named Same"):
        declared_layouts([module])
