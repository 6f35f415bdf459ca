"""The audit log notices tampering: eighteen ways to change audit.db behind the log's back, each one noticed.

The attacker here holds the file and nothing else: they may open it with their
own tools, drop the triggers, rewrite rows, recompute every digest with the
public recipe (SHA-256 of the row's JSON), or overwrite the file. They do not
hold what the host keeps outside the file: the anchor (row count and head
digest) and, when the log is keyed, the HMAC key. The last tests say plainly
what the log cannot stop: an attacker who also holds the key, or who can
rewrite the host's copy of the anchor.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import toolkit as tk
from toolkit.effects import Anchor, AuditLog, Verification, run_audited, verify_audit_file
from toolkit.kernel import RetryController, RetryPolicy
from course.worlds import CREATE_INVOICE

from test_audit import Books  # the same small billing world the audit tests use

KEY = b"host-secret-kept-outside-the-file"
GUARDS = ("audit_events_no_update", "audit_events_no_delete", "audit_events_in_order")


def write_log(path: Path, key: bytes | None = None) -> Anchor:
    """Three audited calls (c1 succeeds after one retry); returns the anchor the host keeps."""
    books = Books(failures=1)
    host = tk.Host.of([tk.Tool(CREATE_INVOICE, books.run)], tk.Caller("agent-427", frozenset({"billing.write"})),
                      books)
    with AuditLog(path, key=key) as log:
        for n in (1, 2, 3):
            args = {"order_id": f"order-43{n}", "amount": 100, "currency": "EUR",
                    "idempotency_key": f"invoice:order-43{n}:v1"}
            run_audited(host, tk.request("create_invoice", args, call_id=f"c{n}"), log, "agent-427",
                        RetryController(RetryPolicy()))
        assert log.story("c1").stopped_at == "succeeded"
        return log.anchor


# ------------------------------------------------------------------ the attacker's tools (no toolkit inside)
def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def drop_guards(conn: sqlite3.Connection) -> None:
    for name in GUARDS:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")


def columns(conn: sqlite3.Connection) -> list[str]:
    return [r[1] for r in conn.execute("PRAGMA table_info(audit_events)")]


def rows(conn: sqlite3.Connection) -> list[dict]:
    names = columns(conn)
    return [dict(zip(names, r)) for r in conn.execute(f"SELECT {', '.join(names)} FROM audit_events ORDER BY seq")]


def forge(row: dict, names: list[str]) -> str:
    """The public recipe: SHA-256 of the row's columns (digest excluded) as compact JSON."""
    content = [row[c] for c in names if c != "digest"]
    return hashlib.sha256(json.dumps(content, separators=(",", ":")).encode()).hexdigest()


def rewrite_chain(conn: sqlite3.Connection, edit) -> None:
    """Drop the guards, apply ``edit`` to the rows, renumber them, recompute every digest, put the guards back."""
    guards = [sql for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' "
                                             "AND tbl_name = 'audit_events'")]
    drop_guards(conn)
    names, old = columns(conn), rows(conn)
    new, prev = [], "0" * 64
    for seq, row in enumerate(edit(old), start=1):
        row = {**row, "seq": seq, "prev": prev}
        row["digest"] = prev = forge(row, names)
        new.append(row)
    conn.execute("DELETE FROM audit_events")
    for row in new:
        conn.execute(f"INSERT INTO audit_events ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
                     [row[c] for c in names])
    for sql in guards:
        conn.execute(sql)


def last_seq(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT MAX(seq) FROM audit_events").fetchone()[0]


def edit_row(which):
    def attack(path: Path) -> None:
        with raw(path) as conn:
            drop_guards(conn)
            conn.execute("UPDATE audit_events SET initiator = 'mallory' WHERE seq = ?", (which(conn),))
    return attack


def delete_rows(where: str):
    def attack(path: Path) -> None:
        with raw(path) as conn:
            drop_guards(conn)
            conn.execute(f"DELETE FROM audit_events WHERE {where}")
    return attack


def insert_in_the_middle(path: Path) -> None:
    """Make room after row 3 and slip a forged row in, chained to row 3."""
    with raw(path) as conn:
        drop_guards(conn)
        names = columns(conn)
        conn.execute("UPDATE audit_events SET seq = seq + 1000 WHERE seq > 3")
        conn.execute("UPDATE audit_events SET seq = seq - 999 WHERE seq > 1000")
        third = rows(conn)[2]
        row = {**third, "seq": 4, "kind": "mark", "target": "approved_by_cfo", "prev": third["digest"]}
        row["digest"] = forge(row, names)
        conn.execute(f"INSERT INTO audit_events ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
                     [row[c] for c in names])


def append_forged_row(recompute: bool):
    """A new last row, through the front door (the triggers allow appends): digest guessed, or computed."""
    def attack(path: Path) -> None:
        with raw(path) as conn:
            names, last = columns(conn), rows(conn)[-1]
            row = {**last, "seq": last["seq"] + 1, "kind": "mark", "target": "refund", "prev": last["digest"]}
            row["digest"] = forge(row, names) if recompute else "f" * 64
            conn.execute(f"INSERT INTO audit_events ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
                         [row[c] for c in names])
    return attack


def swap_two_rows(path: Path) -> None:
    with raw(path) as conn:
        drop_guards(conn)
        conn.execute("UPDATE audit_events SET seq = -2 WHERE seq = 2")
        conn.execute("UPDATE audit_events SET seq = 2 WHERE seq = 3")
        conn.execute("UPDATE audit_events SET seq = 3 WHERE seq = -2")


def edit_and_recompute(path: Path) -> None:
    """Who initiated c2 becomes 'mallory', and every digest from there on is recomputed."""
    with raw(path) as conn:
        rewrite_chain(conn, lambda old: [{**r, "initiator": "mallory"} if r["call_id"] == "c2" else r for r in old])


def drop_table(path: Path) -> None:
    with raw(path) as conn:
        conn.execute("DROP TABLE audit_events")


def empty_table(path: Path) -> None:
    delete_rows("1")(path)


def rename_table(path: Path) -> None:
    with raw(path) as conn:
        conn.execute("ALTER TABLE audit_events RENAME TO audit_events_old")


def drop_the_triggers(path: Path) -> None:
    with raw(path) as conn:
        drop_guards(conn)


def replace_the_last_row(path: Path) -> None:
    """INSERT OR REPLACE: a conflict deletes the old row without firing the delete trigger."""
    with raw(path) as conn:
        names, old = columns(conn), rows(conn)
        last, before = old[-1], old[-2]
        row = {**last, "seq": last["seq"] + 1, "target": "cancelled", "prev": before["digest"]}
        row["digest"] = forge(row, names)
        rowid = conn.execute("SELECT rowid FROM audit_events WHERE seq = ?", (last["seq"],)).fetchone()[0]
        conn.execute(f"INSERT OR REPLACE INTO audit_events (rowid, {', '.join(names)}) "
                     f"VALUES (?, {', '.join('?' for _ in names)})", [rowid] + [row[c] for c in names])


def corrupt_an_index_entry(path: Path) -> None:
    """Point the index entry of c1's last row at the row before it: c1's story then ends at ``running``."""
    with raw(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'audit_events_by_call'").fetchone()[0]
        last = conn.execute("SELECT MAX(seq), MAX(rowid) FROM audit_events WHERE call_id = 'c1'").fetchone()
    data = bytearray(path.read_bytes())
    start = (root - 1) * page_size
    page = bytes(data[start:start + page_size])
    # An index record (call_id 'c1', seq, rowid): header [4, 17, 1, 1], then b"c1", seq, rowid.
    entry = bytes([4, 17, 1, 1]) + b"c1" + bytes([last[0], last[1]])
    at = page.find(entry)
    assert at > 0, "index entry not found"
    data[start + at + len(entry) - 1] = last[1] - 1
    path.write_bytes(bytes(data))


def truncate_the_file(path: Path) -> None:
    with raw(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as handle:
        handle.truncate(size)          # the first page survives: the schema, but no rows


def restore_an_older_copy(older: Path):
    def attack(path: Path) -> None:
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(older, path)
    return attack


def first_row(conn):
    return 1


def middle_row(conn):
    return last_seq(conn) // 2


def last_row(conn):
    return last_seq(conn)


ATTACKS = {
    "edit the first row": edit_row(first_row),
    "edit a middle row": edit_row(middle_row),
    "edit the last row": edit_row(last_row),
    "delete the first row": delete_rows("seq = 1"),
    "delete a middle row": delete_rows("seq = (SELECT MAX(seq) / 2 FROM audit_events)"),
    "delete the last rows": delete_rows("seq > (SELECT MAX(seq) - 3 FROM audit_events)"),
    "insert a row in the middle": insert_in_the_middle,
    "append a row with a made-up digest": append_forged_row(recompute=False),
    "append a row with a recomputed digest": append_forged_row(recompute=True),
    "swap two rows": swap_two_rows,
    "edit a row and recompute every digest after it": edit_and_recompute,
    "drop the table": drop_table,
    "empty the table": empty_table,
    "rename the table": rename_table,
    "drop the triggers": drop_the_triggers,
    "INSERT OR REPLACE the last row": replace_the_last_row,
    "corrupt an index entry": corrupt_an_index_entry,
    "truncate the file": truncate_the_file,
}
assert len(ATTACKS) == 18


@pytest.fixture()
def written(tmp_path):
    path = tmp_path / "audit.db"
    return path, write_log(path)


# ------------------------------------------------------------------ each attack is noticed
@pytest.mark.parametrize("name", ATTACKS)
def test_the_host_notices_the_attack_with_the_anchor_it_kept(written, name):
    path, anchor = written
    assert verify_audit_file(path, anchor).ok
    ATTACKS[name](path)
    check = verify_audit_file(path, anchor)        # never raises, never writes
    assert isinstance(check, Verification) and not check.ok and check.reason, name


@pytest.mark.parametrize("name", ATTACKS)
def test_a_log_opened_on_the_tampered_file_notices_it_too(written, name):
    """Opening the file as a log (which recreates a missing table or trigger) hides nothing from the anchor."""
    path, anchor = written
    ATTACKS[name](path)
    try:
        log = AuditLog(path, anchor=anchor)
    except sqlite3.DatabaseError:                  # the file is no longer a database: that is noticed too
        assert not verify_audit_file(path, anchor).ok
        return
    with log:
        assert not log.verify().ok, name


def test_an_older_copy_put_back_is_noticed(tmp_path):
    path = tmp_path / "audit.db"
    write_log(path)
    older = tmp_path / "older.db"
    with raw(path) as conn:
        conn.execute("VACUUM INTO ?", (str(older),))
    with AuditLog(path, anchor=AuditLog(path).anchor) as log:      # more calls after the copy was taken
        log.track(tk.request("read_file", {"path": "a"}, call_id="c9"), "agent-427").move("approved")
        anchor = log.anchor
    restore_an_older_copy(older)(path)
    check = verify_audit_file(path, anchor)
    assert not check.ok and "anchor" in check.reason


def test_a_missing_file_is_noticed(tmp_path):
    path = tmp_path / "audit.db"
    anchor = write_log(path)
    for p in tmp_path.iterdir():
        p.unlink()
    check = verify_audit_file(path, anchor)
    assert not check.ok and not path.exists()          # verifying created nothing


def test_the_index_attack_really_changes_the_story(written):
    path, anchor = written
    corrupt_an_index_entry(path)
    with AuditLog(path) as log:
        assert log.story("c1").stopped_at == "running"      # the lie the corrupted index tells ...
        check = log.verify(anchor)
    assert not check.ok and "integrity" in check.reason      # ... and what integrity_check finds


def test_what_the_file_alone_proves_without_an_anchor(written):
    """Without the anchor, a rewrite that recomputes every digest is a valid chain: the file cannot tell."""
    path, anchor = written
    edit_and_recompute(path)
    assert verify_audit_file(path).ok                       # the limit, stated
    assert not verify_audit_file(path, anchor).ok           # the anchor closes it


# ------------------------------------------------------------------ the REPLACE path is closed
@pytest.mark.parametrize("sql", [
    "INSERT OR REPLACE INTO audit_events (rowid, seq, at, call_id, tool, initiator, kind, retries, summary, note,"
    " failure, prev, digest) SELECT 1, MAX(seq) + 1, 0, 'x', 'x', 'x', 'mark', 0, '', '', '', '', '' FROM audit_events",
    "REPLACE INTO audit_events SELECT * FROM audit_events WHERE seq = 2",
    "INSERT INTO audit_events SELECT * FROM audit_events WHERE seq = 2 ON CONFLICT DO UPDATE SET note = 'x'",
    "UPDATE OR REPLACE audit_events SET seq = 1 WHERE seq = 2",
])
def test_no_conflict_clause_can_remove_a_row(written, sql):
    path, anchor = written
    with AuditLog(path, anchor=anchor) as log:
        before = log.events()
        try:
            log.conn.execute(sql)
        except sqlite3.IntegrityError as refused:
            assert "append-only" in str(refused)
        else:                                          # only an append got through, and it is noticed
            assert len(log.events()) == len(before) + 1 and not log.verify().ok
        assert log.events()[:len(before)] == before


# ------------------------------------------------------------------ the key: what HMAC adds, and its limit
def test_a_keyed_chain_cannot_be_recomputed_without_the_key(tmp_path):
    path = tmp_path / "audit.db"
    write_log(path, key=KEY)
    assert verify_audit_file(path, key=KEY).ok
    edit_and_recompute(path)                           # a perfect SHA-256 chain, but not the key's HMAC
    check = verify_audit_file(path, key=KEY)           # no anchor needed for this one
    assert not check.ok and check.broken_at == 1 and "key" in check.reason


def test_a_forged_append_is_noticed_by_the_key_alone(tmp_path):
    path = tmp_path / "audit.db"
    write_log(path, key=KEY)
    append_forged_row(recompute=True)(path)
    assert not verify_audit_file(path, key=KEY).ok


def test_an_attacker_who_holds_the_key_and_the_anchor_is_not_stopped(tmp_path):
    """The limit the chapter states: whoever holds the key and can rewrite the kept anchor can forge history."""
    path = tmp_path / "audit.db"
    write_log(path, key=KEY)
    with AuditLog(path, key=KEY) as forger:           # the key and the file: any story can be written
        forger.track(tk.request("read_file", {"path": "x"}, call_id="c9"), "agent-427").move("approved")
        forged_anchor = forger.anchor
    assert verify_audit_file(path, forged_anchor, key=KEY).ok


def test_a_key_is_never_written_to_the_file(tmp_path):
    path = tmp_path / "audit.db"
    write_log(path, key=KEY)
    assert KEY not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


# ------------------------------------------------------------------ the anchor itself
def test_the_anchor_moves_with_every_committed_row_and_not_with_a_rolled_back_one(tmp_path):
    conn = sqlite3.connect(tmp_path / "shared.db", isolation_level=None)
    log = AuditLog(conn)
    record = log.track(tk.request("read_file", {"path": "a"}, call_id="r1"), "agent-427")
    assert log.anchor.rows == 1 and log.verify().ok
    conn.execute("BEGIN IMMEDIATE")
    record.move("approved")                            # joins the caller's transaction ...
    conn.execute("ROLLBACK")                           # ... which rolls back
    assert log.anchor.rows == 1 and log.verify().ok    # no false alarm
    conn.execute("BEGIN IMMEDIATE")
    record.move("running")                             # the record lives in memory: it moved on
    conn.execute("COMMIT")
    assert log.anchor.rows == 2 and log.verify().ok
    conn.close()


def test_a_host_hands_its_anchor_on_to_the_next_writer(tmp_path):
    path = tmp_path / "audit.db"
    anchor = write_log(path)
    with AuditLog(path, anchor=anchor) as next_writer:
        next_writer.track(tk.request("read_file", {"path": "a"}, call_id="c4"), "agent-427")
        assert next_writer.anchor.rows == anchor.rows + 1
        assert next_writer.verify().ok
        assert not next_writer.verify(anchor).ok       # the old anchor no longer describes the file


def test_a_writer_given_a_wrong_anchor_does_not_bless_the_file(written):
    path, anchor = written
    edit_and_recompute(path)
    with AuditLog(path, anchor=anchor) as log:         # appending on top of a rewritten file ...
        log.track(tk.request("read_file", {"path": "a"}, call_id="c4"), "agent-427")
        assert log.anchor == anchor and not log.verify().ok   # ... moves no anchor over the rewrite


def test_an_anchor_is_plain_data():
    anchor = Anchor(3, "ab" * 32)
    assert Anchor(**anchor.to_dict()) == anchor and "3 rows" in anchor.line()


def test_bad_files_give_a_verification_not_an_exception(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    check = verify_audit_file(junk, Anchor(1, "0" * 64))
    assert not check.ok and "database" in check.reason
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    assert not verify_audit_file(other).ok             # no audit table at all
