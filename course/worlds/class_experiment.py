"""Chapter 05: the class experiment: every student's agent loses an answer and retries, against one billing service.

The story is the chapter's. The agent sends ``create_invoice`` for its order;
billing creates the invoice, and the answer is lost on the way back (a
timeout: the outcome is unknown). Then the agent retries.

* keys off (the agent still sends its key, and keeps no ledger): the agent
  takes "no answer" to mean "nothing happened" and sends the request again;
  billing, which does not look at keys, makes a second invoice for the same
  order;
* keys on (the chapter's rule): the agent marks the key pending in a durable
  ledger before it sends; after the timeout the key is still pending, the
  ledger answers a blind re-run "in progress" and runs nothing, and the agent
  asks billing what it holds under the key before anything else. Billing has
  the invoice; the key is reconciled with it and nothing is sent again.

On the course hub every student's kernel finds the class's shared service
in ``COURSE_BILLING_URL`` (``class_billing_url``) and tags each invoice with
the student (``JUPYTERHUB_USER``), so the instructor's dashboard
(``course.worlds.class_tally``) counts the room's duplicates live. Without
a hub, ``run_class_experiment`` starts a billing service of its own on this
machine for the length of the call, and says so.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from toolkit.kernel import FailureClass, Status, ToolFailure
from toolkit.kernel import LedgerStatus
from toolkit.effects import DurableLedger
from course.worlds import BillingClient
from course.worlds import start
from course.worlds import student_errors

#: The variable the hub sets in every student's kernel: the shared billing service's URL.
BILLING_URL_VARIABLE = "COURSE_BILLING_URL"
#: The order a student's first run bills; each further run bills the next one.
FIRST_ORDER = 431
#: What the run says when no hub is found.
LOCAL_WHERE = "a local billing service on this machine (no class hub found)"


def class_billing_url() -> str | None:
    """The class's shared billing service when this kernel runs on the course hub, else None."""
    url = os.environ.get(BILLING_URL_VARIABLE, "").strip()
    return url or None


def default_student() -> str:
    """The hub's name for this student (``JUPYTERHUB_USER``), or "you" off the hub."""
    return os.environ.get("JUPYTERHUB_USER", "").strip() or "you"


@dataclass(frozen=True)
class ClassRun:
    """One student's run: where it ran, who, with keys or not, and what billing holds for the order afterwards."""

    where: str
    student: str
    keyed: bool
    order_id: str
    invoices: int                 # invoices billing holds for this student's order after the run
    duplicates: int               # invoices beyond the first one
    invoice_ids: tuple[str, ...]
    trace: tuple[str, ...]

    def lines(self) -> list[str]:
        """The run as lines to print: where, who, the trace, the count."""
        extra = "no duplicate" if not self.duplicates else f"{self.duplicates} duplicate" + \
            ("s" if self.duplicates > 1 else "")
        return [f"billing: {self.where}",
                f"student: {self.student} | order: {self.order_id} | key: sent with every request"
                f" | the agent's ledger rule: {'on' if self.keyed else 'off'}",
                *(f"t{i}  {line}" for i, line in enumerate(self.trace)),
                f"invoices for {self.order_id} made by {self.student}: {self.invoices} "
                f"{list(self.invoice_ids)} ({extra})"]


@contextmanager
def billing_for_class(url: str | None, student: str) -> Iterator[tuple[BillingClient, str]]:
    """A client for the shared service at ``url``; with None, a local service that lives for the ``with`` block."""
    if url is not None:
        yield BillingClient(url=url, student=student, timeout=10.0), f"the class's shared billing service at {url}"
        return
    with tempfile.TemporaryDirectory(prefix="class-experiment-") as work, start(Path(work) / "billing.db") as local:
        yield BillingClient(local.port, student=student), LOCAL_WHERE


def run_class_experiment(student: str | None = None, keyed: bool = False, url: str | None = None) -> ClassRun:
    """Run this student's agent through the lost answer and the retry; keyed or not; count the invoices.

    ``url`` defaults to ``class_billing_url()``; when there is none a local
    billing service is started and stopped inside the call. Each invoice is
    tagged with ``student`` (default: the hub's name for this student, or
    "you"). A second run bills the student's next order.
    """
    student = default_student() if student is None else student
    errors = student_errors(student)
    if errors or not student:
        raise ValueError(errors[0].message if errors else "the student tag must not be empty")
    url = class_billing_url() if url is None else url
    with billing_for_class(url, student) as (client, where), \
            tempfile.TemporaryDirectory(prefix="class-agent-") as work:
        order_id = _next_order(client, student)
        arguments = {"order_id": order_id, "amount": 120.0, "currency": "EUR",
                     "idempotency_key": f"invoice:{order_id}:{student}:v1"}
        trace: list[str] = []
        if keyed:
            with DurableLedger(Path(work) / "agent-ledger.db") as ledger:
                _keyed_story(client, ledger, arguments, trace)
        else:
            _unkeyed_story(client, arguments, trace)
        mine = [i["invoice_id"] for i in client.invoices()
                if i["order_id"] == order_id and i.get("student") == student]
    return ClassRun(where, student, keyed, order_id, len(mine), max(len(mine) - 1, 0), tuple(mine), tuple(trace))


def _next_order(client: BillingClient, student: str) -> str:
    """The student's next order: order-431 first, then one more for every order already billed."""
    billed = {i["order_id"] for i in client.invoices() if i.get("student") == student}
    return f"order-{FIRST_ORDER + len(billed)}"


def _send_and_lose(client: BillingClient, arguments: dict, trace: list[str]) -> dict:
    """Billing creates the invoice; its answer never reaches the agent (a timeout)."""
    invoice = client.create_invoice(arguments)
    trace.append(f"billing creates {invoice['invoice_id']}; its answer is lost on the way back")
    raise ToolFailure(Status.TIMEOUT, "no_answer", "no answer within 5 s", FailureClass.TIMEOUT)


def _unkeyed_story(client: BillingClient, arguments: dict, trace: list[str]) -> None:
    trace.append(f"agent sends create_invoice({arguments['order_id']}, key={arguments['idempotency_key']})")
    try:
        _send_and_lose(client, arguments, trace)
    except ToolFailure as failure:
        trace.append(f"agent hears nothing ({failure.message}) and takes it to mean nothing happened")
    trace.append("agent retries: the same request again, without asking billing first")
    again = client.create_invoice(arguments)
    trace.append(f"billing recognizes the key and returns {again['invoice_id']} (this service honours keys)"
                 if again.get("replayed") else
                 f"billing, which does not look at keys, creates {again['invoice_id']} for the same order")


def _keyed_story(client: BillingClient, ledger: DurableLedger, arguments: dict,
                 trace: list[str]) -> None:
    key = arguments["idempotency_key"]
    trace.append(f"agent marks {key} pending in its durable ledger, then sends create_invoice")
    first = ledger.call(key, lambda args: _send_and_lose(client, args, trace), arguments, tool="create_invoice")
    trace.append(f"no answer: the key stays {first.status.value} in the ledger; "
                 "the outcome is unknown")
    retry = ledger.call(key, client.create_invoice, arguments, tool="create_invoice")
    if retry.status is LedgerStatus.IN_PROGRESS:
        trace.append("agent retries: the ledger finds the key still pending, "
                     "answers in progress and runs nothing; ask billing first")
        settled = ledger.reconcile(key, arguments, lambda args: client.find(args["idempotency_key"]),
                                   tool="create_invoice")
        found = settled.result["invoice_id"] if settled.ok and isinstance(settled.result, dict) else None
        trace.append(f"billing holds {found} under the key; the ledger records it and marks "
                     f"the key done ({settled.status.value}); nothing is sent again" if found else
                     f"billing holds nothing under the key ({settled.status.value}); a person must look")
    else:
        trace.append(f"agent retries: the ledger answers {retry.status.value}")


__all__ = ["BILLING_URL_VARIABLE", "ClassRun", "FIRST_ORDER", "LOCAL_WHERE", "billing_for_class",
           "class_billing_url", "default_student", "run_class_experiment"]
