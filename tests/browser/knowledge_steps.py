"""How a student operates a chapter's knowledge check in the page, for the browser tests.

The check (``course/present/knowledge_check.py``) is two menus, "question" and "your answer", over
one display. ``knowledge_chapter(number)`` writes the operations of ``widget_chapters`` for it: for
each of the first two questions, a wrong answer and then the right one, each step naming the verdict
and the reason the page must then show and the light it must draw.

A notebook whose only widget is its knowledge check (the start page, Chapters 07 and 09) needs such
an entry in ``widget_chapters.CHAPTERS``: ``knowledge_only`` gives one for every notebook that shows
a widget, carries the check and has no entry of its own.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from course.present.knowledge_check import LETTERS, quiz  # noqa: E402

QUESTION, ANSWER = "question", "your answer"
CALL = "knowledge_check("


def wrong_of(chapter: str, index: int) -> int:
    """The first wrong choice of question ``index``."""
    return next(i for i, c in enumerate(quiz(chapter).questions[index].choices) if not c.right)


def answer_steps(chapter: str, index: int) -> tuple:
    """Go to question ``index`` (unless it is the first, shown already), pick a wrong answer, then
    the right one: steps of ``widget_chapters``, each changing what the page shows."""
    from widget_chapters import select

    questions = quiz(chapter).questions
    question, count = questions[index], len(questions)
    wrong, right = wrong_of(chapter, index), question.right
    light = f'[data-question="{index + 1}"]'
    go = (select(QUESTION, f"{index + 1} of {count}", f"question {index + 1} of {count}",
                 question.prompt, "your answer: none yet",
                 draws=(f'{light}[data-current="yes"]',)),)
    return (go if index else ()) + (
        select(ANSWER, LETTERS[wrong], f"your answer: {LETTERS[wrong]}, wrong",
               f"why: {question.choices[wrong].why}", draws=(f'{light}[data-state="wrong"]',),
               undraws=(f'{light}[data-state="right"]',)),
        select(ANSWER, LETTERS[right], f"your answer: {LETTERS[right]}, right",
               f"why: {question.choices[right].why}", hides=(question.choices[wrong].why,),
               draws=(f'{light}[data-state="right"]',)),
    )


def knowledge_chapter(chapter: str):
    """The ``widget_chapters.Chapter`` that operates ``chapter``'s knowledge check."""
    from widget_chapters import Chapter, select

    last = quiz(chapter).questions[1]               # the steps end on question 2: the flip works it
    wrong = wrong_of(chapter, 1)
    count = len(quiz(chapter).questions)
    return Chapter(
        summary=f"the chapter {chapter} check says why each answer picked is right or wrong, and "
                "counts the right ones",
        first=(f"chapter {chapter}, question 1 of {count}", "your answer: none yet",
               f"score: 0 of {count} right"),
        steps=answer_steps(chapter, 0) + answer_steps(chapter, 1),
        flip=(select(ANSWER, LETTERS[wrong], f"your answer: {LETTERS[wrong]}, wrong"),
              select(ANSWER, LETTERS[last.right], f"your answer: {LETTERS[last.right]}, right")),
    )


def carries_check(path: Path) -> bool:
    """True when a code cell of the notebook at ``path`` shows a knowledge check."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    return any(cell.cell_type == "code" and CALL in cell.source for cell in notebook.cells)


def knowledge_only(chapters: dict, folder: Path = ROOT / "notebooks") -> dict:
    """Entries for the widget notebooks in ``folder`` whose only widget is their knowledge check."""
    from widget_chapters import shows_a_widget

    found = {}
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        if path.stem not in chapters and shows_a_widget(path) and carries_check(path):
            found[path.stem] = knowledge_chapter(path.name[:2])
    return found
