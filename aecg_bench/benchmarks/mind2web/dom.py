"""MindAct's rendering of candidate elements from a step's cleaned HTML.

Our own code following OSU-NLP-Group/Mind2Web `src/data_utils/dom_utils.py`
(`prune_tree`, `get_tree_repr`, `get_attribute_repr`) and
`src/action_prediction/dataloader.py` (`format_input_multichoice`): the page is
pruned to the candidates (their ancestors, descendants to depth 5, at most 50,
and 3 siblings each side), every element keeps only its id (candidates) and a
`meta` of up to 5 short words from each of a fixed list of attributes, and a
candidate's description is the first n whitespace tokens of its subtree's
rendering. MindAct uses n = 10; EDV (App. D.2) uses 20.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping

from lxml import etree

ATTRIBUTES = (
    "role", "aria_role", "type", "alt", "aria_description", "aria_label", "label", "title", "name",
    "text_value", "value", "placeholder", "input_checked", "input_value", "option_selected", "class",
)  # fmt: skip
_SKIP_VALUES = {"hidden", "none", "presentation", "null", "undefined"}
_ENTITIES = (
    ("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"), ("&nbsp;", " "), ("&ndash;", "-"),
    ("&rsquo;", "'"), ("&lsquo;", "'"), ("&ldquo;", '"'), ("&rdquo;", '"'), ("&#39;", "'"), ("&#40;", "("),
    ("&#41;", ")"),
)  # fmt: skip
ID = "backend_node_id"


def parse(html: str) -> etree._Element:
    """Cleaned HTML is well-formed XML; MindAct parses it with `lxml.etree.fromstring`."""
    return etree.fromstring(html)


def _descendants(node: etree._Element, max_depth: int, depth: int = 0) -> list[etree._Element]:
    if depth > max_depth:
        return []
    out: list[etree._Element] = []
    for child in node:
        out.append(child)
        out += _descendants(child, max_depth, depth + 1)
    return out


def prune(tree: etree._Element, candidates: Iterable[str], max_depth: int = 5, max_children: int = 50,
          max_sibling: int = 3) -> etree._Element:  # fmt: skip
    """A copy of the page reduced to what surrounds the candidates (MindAct's `prune_tree`)."""
    cand = set(candidates)
    keep: set[str] = set()
    for cid in cand:
        found = tree.xpath(f'//*[@{ID}="{cid}"]')
        if not found:
            continue
        node = found[0]
        keep.add(node.attrib[ID])
        keep.update(a.attrib.get(ID, "") for a in node.xpath("ancestor::*"))
        keep.update([d.attrib.get(ID, "") for d in _descendants(node, max_depth)][:max_children])
        parent = node.getparent()
        if parent is not None:
            siblings = [s for s in parent if s.tag != "text"]
            i = siblings.index(node)
            keep.update(s.attrib.get(ID, "") for s in siblings[max(0, i - max_sibling) : i + max_sibling + 1])
    new = copy.deepcopy(tree)
    for node in new.xpath("//*")[::-1]:
        owner = node if node.tag != "text" else node.getparent()
        nid = owner.attrib.get(ID, "")
        parent = node.getparent()
        if nid not in keep and parent is not None:
            parent.remove(node)
            continue
        if nid not in cand or node.tag == "text":
            node.attrib.pop(ID, None)
        if (
            len(node.attrib) == 0
            and not any(c.tag == "text" for c in node)
            and parent is not None
            and node.tag != "text"
            and len(node) <= 1
        ):
            for child in list(node):
                node.addprevious(child)
            parent.remove(node)
    return new


def _attribute_repr(node: etree._Element, max_value_length: int, max_length: int, ids: Mapping[str, str]) -> None:
    seen: set[str] = set()
    values = ""
    for attr in ATTRIBUTES:
        raw = node.attrib.get(attr)
        if raw is None:
            continue
        value = raw.lower()
        if value in _SKIP_VALUES or value.startswith("http"):
            continue
        value = " ".join([v for v in value.split() if len(v) < 15][:max_value_length])
        if value and value not in seen:
            seen.add(value)
            values += value + " "
    uid = node.attrib.get(ID, "")
    uid = ids.get(uid, uid)
    node.attrib.clear()
    if uid:
        node.attrib["id"] = uid
    if values:
        node.attrib["meta"] = " ".join(values.split()[:max_length])


def render(tree: etree._Element, keep_html_brackets: bool = True, max_value_length: int = 5,
           max_length: int = 20, ids: Mapping[str, str] | None = None) -> str:  # fmt: skip
    """MindAct's `get_tree_repr` of an element and its subtree; `ids` renames element ids (its `id_mapping`)."""
    tree = copy.deepcopy(tree)
    for node in tree.xpath("//*"):
        if node.tag != "text":
            _attribute_repr(node, max_value_length, max_length, ids or {})
        else:
            node.text = " ".join((node.text or "").split()[:max_length])
    text = etree.tostring(tree, encoding="unicode")
    text = text.replace('"', " ").replace("meta= ", "").replace("id= ", "id=").replace(" >", ">")
    text = re.sub(r"<text>(.*?)</text>", r"\1", text)
    if not keep_html_brackets:
        text = text.replace("/>", "$/$>")
        text = re.sub(r"</(.+?)>", ")", text)
        text = re.sub(r"<(.+?)>", r"(\1", text)
        text = text.replace("$/$", ")")
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return re.sub(r"\s+", " ", text).strip()


def describe_candidates(html: str, candidate_ids: Iterable[str], n_tokens: int = 20,
                        keep_html_brackets: bool = True) -> list[tuple[str, str]]:  # fmt: skip
    """(id, description) of each candidate found on the page, in page order (MindAct's choices).

    As MindAct's `format_input_multichoice`, the ids shown are the candidates' positions in page order
    (0, 1, ...: `get_tree_repr`'s `id_mapping` of the pruned page, where only candidates keep an id),
    not the page's backend node ids."""
    pruned = prune(parse(html), list(candidate_ids))
    nodes = pruned.xpath(f"//*[@{ID}]")
    ids = {node.attrib[ID]: str(i) for i, node in enumerate(nodes)}
    out = []
    for node in nodes:
        words = render(node, keep_html_brackets, ids=ids).split()[:n_tokens]
        out.append((node.attrib[ID], " ".join(words)))
    return out
