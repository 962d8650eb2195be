"""The schema checks every Python test's tool calls go through (conftest's `checked`) refuse what the
official SDKs refused: a schema listing a required field twice or one it does not declare, and a result
missing a field its outputSchema requires."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from conftest import ToolSchemas, schema_problems

GOOD = {"type": "object", "properties": {"operations": {"type": "array"}}, "required": ["operations"]}


def test_a_required_field_listed_twice_or_undeclared_is_refused():
    twice = {**GOOD, "required": ["operations", "operations"]}
    assert any("non-unique" in p for p in schema_problems(twice, "get_task")), schema_problems(twice, "get_task")
    undeclared = {**GOOD, "required": ["sessions"]}
    assert schema_problems(undeclared, "t") == ["t #: `sessions` is required but not in properties"]
    assert schema_problems(GOOD, "t") == []


def test_a_result_missing_a_required_field_is_refused_and_so_is_an_error_with_structured_content():
    tools = ToolSchemas([SimpleNamespace(name="help", input_schema={"type": "object"}, output_schema=GOOD)], "x")
    with pytest.raises(AssertionError, match="does not match its outputSchema"):
        tools.check("help", SimpleNamespace(is_error=False, structured_content={"topics": []}))
    tools.check("help", SimpleNamespace(is_error=False, structured_content={"operations": []}))
    # The TS SDK 1.x checks an error's structuredContent too; an error without one is not checked.
    with pytest.raises(AssertionError, match="does not match its outputSchema"):
        tools.check("help", SimpleNamespace(is_error=True, structured_content={"error": {"code": "x"}}))
    tools.check("help", SimpleNamespace(is_error=True, structured_content=None))
