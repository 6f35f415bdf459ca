"""Chapters 00-09: the knowledge check that closes each chapter, every choice explained.

The questions live in ``knowledge_questions.toml`` beside this module, keyed by chapter. A
student picks a question and an answer from two menus; the panel shows the question, its choices,
the verdict on the answer and why that choice is right or wrong, and a row of lights (one per
question: grey unanswered, red wrong, green right). Everything runs in the widget: no network, and
nothing from the kernel's other cells.

Driven from Python as a test drives it::

    check = knowledge_check("03")
    answer = check.choose(0, 1)        # question 1, choice B: a QuizAnswer with .right and .why
    print(check.text())                # what the panel shows, as text

``choose`` sets the two menus, exactly as a click does, and the panel redraws itself from their
values; so the text form, the drawing and the menus are always one state.
"""
from __future__ import annotations

import html
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from course.present.svg import (FONT, GREEN, GREY, INK, MUTED, PAPER, RED, svg_circle, svg_figure,
                                 svg_rect, svg_text)

QUESTIONS_FILE = Path(__file__).with_name("knowledge_questions.toml")
LETTERS = "ABCDEF"
NOT_YET = "–"                      # the answer menu's first entry: nothing chosen yet
#: How a question's light looks: its fill, and the word the drawing and the text form use for it.
LIGHT = {"unanswered": GREY, "wrong": RED, "right": GREEN}


@dataclass(frozen=True)
class QuizChoice:
    text: str
    why: str                        # why this choice is right or wrong, shown when it is chosen
    right: bool = False
    value: str | None = None        # what the choice claims the toolkit computes (tests check it)


@dataclass(frozen=True)
class Question:
    id: str
    prompt: str
    choices: tuple[QuizChoice, ...]

    @property
    def right(self) -> int:
        """The index of the one right choice."""
        return next(i for i, choice in enumerate(self.choices) if choice.right)


@dataclass(frozen=True)
class QuizAnswer:
    """The verdict on one choice: which question, which choice, whether it is right, and why."""

    question: int
    choice: int
    right: bool
    why: str

    @property
    def verdict(self) -> str:
        return "right" if self.right else "wrong"

    def line(self) -> str:
        return f"{LETTERS[self.choice]} is {self.verdict}: {self.why}"


@dataclass(frozen=True)
class Quiz:
    chapter: str
    title: str
    questions: tuple[Question, ...]


def chapter_key(chapter: str | int) -> str:
    """``3``, ``"3"`` and ``"03"`` all name chapter ``"03"``."""
    return f"{int(chapter):02d}"


@lru_cache(maxsize=1)
def _quizzes() -> dict[str, Quiz]:
    data = tomllib.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))["chapters"]
    quizzes = {}
    for chapter, table in data.items():
        questions = tuple(
            Question(q["id"], q["prompt"].strip(), tuple(QuizChoice(**c) for c in q["choices"]))
            for q in table["questions"])
        for question in questions:
            choices = question.choices
            if sum(c.right for c in choices) != 1 or not all(c.why.strip() for c in choices):
                raise ValueError(f"{question.id}: one right choice, and a reason for every choice")
            if len(question.choices) > len(LETTERS):
                raise ValueError(f"{question.id}: at most {len(LETTERS)} choices")
        quizzes[chapter] = Quiz(chapter, table["title"], questions)
    return quizzes


def quiz(chapter: str | int) -> Quiz:
    """The title and questions of one chapter's check (``KeyError`` for a chapter without one)."""
    return _quizzes()[chapter_key(chapter)]


def quiz_chapters() -> tuple[str, ...]:
    """Every chapter that has a check, in order."""
    return tuple(sorted(_quizzes()))


def lights_svg(quiz: Quiz, states: list[str], current: int) -> str:
    """One light per question (its state as colour and ``data-state``), the current one ringed."""
    count = len(quiz.questions)
    width, height = 60 + 56 * count + 150, 56
    parts = [svg_rect(0, 0, width, height, PAPER, rx=8), svg_text(14, 33, "questions", 12, MUTED)]
    for i, state in enumerate(states):
        x = 100 + 56 * i
        ring = INK if i == current else None
        parts.append(svg_circle(x, 28, 15, LIGHT[state], ring, data_question=i + 1,
                                data_state=state, data_current="yes" if i == current else "no"))
        parts.append(svg_text(x, 33, i + 1, 13, "white", "middle", "bold"))
    score = states.count("right")
    parts.append(svg_text(100 + 56 * count, 33, f"{score} of {count} right", 13, INK,
                          weight="bold"))
    label = f"question {current + 1} of {count}; " + ", ".join(
        f"{i + 1} {s}" for i, s in enumerate(states))
    return svg_figure(width, height, parts, label, data_right=score, data_current=current + 1)


def quiz_html(text: str, drawing: str) -> str:
    """The text form, shown as it is (wrapped, in the page's font), then the lights."""
    style = f"{FONT};white-space:pre-wrap;line-height:1.4;margin:0 0 6px 0;max-width:60em"
    return (f"<div class='tk-text' style='{style}'>{html.escape(text)}</div>"
            f"<div class='tk-panel'>{drawing}</div>")


class KnowledgeCheck:
    """Two menus and a panel; ``choose`` and ``show`` drive it, ``text`` reads it."""

    def __init__(self, chapter: str | int):
        import ipywidgets as w

        self.quiz = quiz(chapter)
        self.chosen: dict[int, int] = {}           # question index -> the choice picked last
        count = len(self.quiz.questions)
        self.picker = w.Dropdown(description="question", value=0, layout=w.Layout(width="180px"),
                                 options=[(f"{i + 1} of {count}", i) for i in range(count)])
        self.answer = w.Dropdown(description="your answer", layout=w.Layout(width="200px"),
                                 style={"description_width": "initial"})
        self.view = w.HTML()
        self._syncing = False
        self._offer(0)
        self.picker.observe(self._on_question, names="value")
        self.answer.observe(self._on_answer, names="value")
        self.widget = w.VBox([w.HBox([self.picker, self.answer]), self.view])
        self._update()

    # ------------------------------------------------------------------ driven from Python
    def show(self, question: int) -> str:
        """Go to ``question`` (0-based), as the menu does; returns the text shown."""
        self._question(question)
        self.picker.value = question
        return self.text()

    def choose(self, question: int, choice: int) -> QuizAnswer:
        """Pick ``choice`` for ``question`` (both 0-based), as the menus do; returns the verdict."""
        if not 0 <= choice < len(self._question(question).choices):
            raise IndexError(f"question {question + 1} has no choice {choice}")
        self.picker.value = question
        self.answer.value = choice
        return self.verdict(question)

    def verdict(self, question: int) -> QuizAnswer | None:
        """The verdict on the choice last picked for ``question``, or None when none was picked."""
        choice = self.chosen.get(question)
        if choice is None:
            return None
        picked = self._question(question).choices[choice]
        return QuizAnswer(question, choice, picked.right, picked.why)

    def states(self) -> list[str]:
        """Each question's light: unanswered, wrong or right (by the choice last picked)."""
        return [verdict.verdict if (verdict := self.verdict(i)) else "unanswered"
                for i in range(len(self.quiz.questions))]

    def text(self) -> str:
        return self._text

    # ------------------------------------------------------------------ the panel
    def _question(self, index: int) -> Question:
        if not 0 <= index < len(self.quiz.questions):
            raise IndexError(f"chapter {self.quiz.chapter} has no question {index}")
        return self.quiz.questions[index]

    def _offer(self, index: int) -> None:
        """Fill the answer menu with the letters of question ``index``, showing its last pick."""
        count = len(self._question(index).choices)
        letters = [(NOT_YET, None)] + [(LETTERS[i], i) for i in range(count)]
        self._syncing = True
        try:
            self.answer.options = letters
            self.answer.value = self.chosen.get(index)
        finally:
            self._syncing = False

    def _on_question(self, change: dict) -> None:
        self._offer(change["new"])
        self._update()

    def _on_answer(self, change: dict) -> None:
        if self._syncing:
            return
        if change["new"] is None:
            self.chosen.pop(self.picker.value, None)
        else:
            self.chosen[self.picker.value] = change["new"]
        self._update()

    def _render(self) -> str:
        index = self.picker.value
        question, count = self.quiz.questions[index], len(self.quiz.questions)
        lines = [f"Check your understanding: chapter {self.quiz.chapter}, "
                 f"question {index + 1} of {count}", question.prompt, ""]
        lines += [f"  {LETTERS[i]}. {choice.text}" for i, choice in enumerate(question.choices)]
        lines.append("")
        verdict = self.verdict(index)
        if verdict is None:
            *first, last = LETTERS[:len(question.choices)]
            lines.append(f"your answer: none yet (pick {', '.join(first)} or {last} in the menu)")
        else:
            lines += [f"your answer: {LETTERS[verdict.choice]}, {verdict.verdict}",
                      f"why: {verdict.why}"]
        lines.append(f"score: {self.states().count('right')} of {count} right")
        return "\n".join(lines)

    def _update(self) -> None:
        self._text = self._render()
        drawing = lights_svg(self.quiz, self.states(), self.picker.value)
        self.view.value = quiz_html(self._text, drawing)

    def _ipython_display_(self) -> None:  # pragma: no cover - display only
        from IPython.display import display

        display(self.widget)


def knowledge_check(chapter: str | int) -> KnowledgeCheck:
    """The knowledge check of ``chapter`` ("03", "3" or 3), ready to display with ``.widget``."""
    return KnowledgeCheck(chapter)


__all__ = ["KnowledgeCheck", "Question", "Quiz", "QuizAnswer", "QuizChoice", "knowledge_check",
           "quiz", "quiz_chapters"]
