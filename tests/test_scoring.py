"""The governed score and the choice among legal calls, with the chapter's numbers."""
import toolkit as tk
from course.present.plots import flip_point


def test_governed_score_worked_number():
    # Pre = 1, postcondition confidence 0.9 on a payoff of 10, cost 2, risk 1, both priced at one unit.
    assert tk.governed_score(tk.expected_value(0.9, 10), cost=2, risk=1) == 6


def test_read_beats_eager_edit():
    read, edit = tk.Option("read", 8, 1, 1), tk.Option("edit", 11, 2, 6)
    assert (read.score(), edit.score()) == (6, 3)
    assert tk.choose([edit, read]).best is read


def test_safer_call_wins_the_tiny_example():
    safe, risky = tk.Option("safe", 10, 2, 1), tk.Option("risky", 11, 2, 6)
    choice = tk.choose([safe, risky], lam_c=1, lam_r=1)
    assert choice.scores == {"safe": 7, "risky": 3} and choice.best is safe


def test_illegal_calls_are_never_candidates():
    tempting = tk.Option("tempting", 100, 0, 0, legal=0)
    modest = tk.Option("modest", 1, 0, 0)
    choice = tk.choose([tempting, modest])
    assert choice.best is modest and choice.excluded == ("tempting",)
    assert tk.choose([tempting]).best is None


def test_flip_point_is_where_the_choice_changes():
    safe, risky = tk.Option("safe", 10, 2, 1), tk.Option("risky", 11, 2, 6)
    r = flip_point(safe, risky)
    assert r == 0.2
    assert tk.choose([safe, risky], lam_r=r - 0.01).best is risky
    assert tk.choose([safe, risky], lam_r=r + 0.01).best is safe


def test_a_model_can_only_pick_a_declared_tool_and_the_declaration_decides():
    from course.worlds import declaration_words, pick_tool
    read = {"name": "read_file", "description": "Return the content of one file."}
    edit = {"name": "edit_file", "description": "Replace text in a file of the build."}
    clear = pick_tool("return the content of the build script", [read, edit])
    assert clear.best == "read_file" and clear.matched["read_file"] == ("content", "return")
    assert pick_tool("return the content of the build script", [edit]).best == "edit_file"   # improvises
    vague = {"name": "fs", "description": "Helper."}
    assert pick_tool("return the content of the build script", [vague, edit]).best == "edit_file"
    assert pick_tool("return the content", [vague]).best is None
    assert "no declared tool fits" in pick_tool("return the content", [vague]).lines()[-1]
    padded = {**read, "description": read["description"] + " Set up in 2019 by the platform team for compliance."}
    assert pick_tool("return the content", [padded]).scores["read_file"] < clear.scores["read_file"]
    tie = pick_tool("file", [{"name": "a", "description": "file"}, {"name": "b", "description": "file"}])
    assert tie.best == "a"                                          # ties go to the earlier tool
    schema = {"name": "t", "input_schema": {"properties": {"module_name": {"description": "dotted name"}}}}
    assert {"module", "name", "dotted"} <= declaration_words(schema)
