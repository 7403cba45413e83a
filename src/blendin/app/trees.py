"""The tree editor: a category hierarchy built from the column's own values, by ticking
values (or groups) and naming the group they form, level by level."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from blendin.app.profile import is_nested
from blendin.app.state import Session
from blendin.app.workflow import hierarchy_preview
from blendin.errors import BlendinError

#: distinct values above which a column gets no tree editor (intervals, masking or a file)
TREE_VALUES = 300


def value_counts(session: Session, column: str) -> dict[str, int]:
    """The column's distinct values (as text) with their records, most frequent first
    (counted once per loaded table)."""
    known = session.data.counted.get(column)
    if known is not None:
        return known
    counted = pc.value_counts(pc.cast(session.data.table.column(column), pa.string()))
    values = counted.field("values").to_pylist()
    counts = counted.field("counts").to_pylist()
    order = sorted(range(len(values)), key=lambda i: (-counts[i], str(values[i])))
    known = {("" if values[i] is None else values[i]): int(counts[i]) for i in order}
    session.data.counted[column] = known
    return known


def current_tree(session: Session, column: str) -> dict | None:
    """The column's tree: the one chosen, else every value a leaf of its own (None when the
    column has too many values to group by hand)."""
    table = session.hierarchies.get(column) or {}
    if isinstance(table.get("tree"), dict) and table["tree"]:
        return table["tree"]
    if is_nested(session.data.table.schema.field(column).type):
        return None  # lists or records: no values to group (the spec refuses them as QIs)
    counts = value_counts(session, column)
    if len(counts) > TREE_VALUES:
        return None
    return {value: {} for value in counts}


def tree_items(session: Session, column: str) -> list[dict]:
    """The tree's top items as the editor lists them: name, whether a group, the records
    under it and what it holds."""
    tree = current_tree(session, column) or {}
    counts = value_counts(session, column)
    items = []
    for name, child in tree.items():
        leaves = _leaves(child) if child != {} else [name]
        items.append({"name": name, "group": child != {},
                      "records": sum(counts.get(v, 0) for v in leaves),
                      "holds": _describe_group(child) if child != {} else ""})
    return items


def _leaves(node) -> list[str]:
    if isinstance(node, list):
        return list(node)
    out = []
    for key, child in node.items():
        out.extend([key] if child == {} else _leaves(child))
    return out


def _describe_group(node) -> str:
    names = list(node) if isinstance(node, dict) else list(node)
    shown = ", ".join(names[:6]) + (f" … ({len(names)} in all)" if len(names) > 6 else "")
    return shown


def group_values(session: Session, column: str, names: list[str], group: str) -> None:
    """Gather the tree's top items ``names`` into a new group ``group`` (a level above
    them), where the first of them stood."""
    tree = current_tree(session, column)
    group = group.strip()
    if tree is None:
        raise BlendinError(f"{column!r} has more than {TREE_VALUES} values to group by hand",
                           fix="use intervals, masking or an ARX hierarchy file")
    if not names:
        raise BlendinError("no value was ticked", fix="tick the values to put in one group")
    if not group:
        raise BlendinError("the new group has no name", fix="type its name, e.g. married")
    unknown = [n for n in names if n not in tree]
    if unknown:
        raise BlendinError(f"{unknown[0]!r} is not at the top of the tree",
                           fix="reload the page and tick again")
    if group in tree and group not in names:
        raise BlendinError(f"{group!r} is already at the top of the tree",
                           fix="give the group another name")
    moved = {n: tree[n] for n in names}
    out: dict = {}
    for key, child in tree.items():
        if key == names[0]:
            out[group] = moved
        if key not in moved:
            out[key] = child
    session.hierarchies[column] = {"tree": out}
    hierarchy_preview(session, column, session.hierarchies[column])  # the tree builds


def ungroup(session: Session, column: str, group: str) -> None:
    """Put the items of the top group ``group`` back at the top, where it stood."""
    tree = current_tree(session, column) or {}
    child = tree.get(group)
    if not child:
        raise BlendinError(f"{group!r} is not a group at the top of the tree",
                           fix="reload the page")
    items = {v: {} for v in child} if isinstance(child, list) else child
    clash = [k for k in items if k in tree and k != group]
    if clash:
        raise BlendinError(f"{group!r} holds {clash[0]!r}, which is also at the top of the "
                           "tree", fix="rename one of the two groups first")
    out: dict = {}
    for key, value in tree.items():
        if key == group:
            out.update(items)
        else:
            out[key] = value
    session.hierarchies[column] = {"tree": out}
