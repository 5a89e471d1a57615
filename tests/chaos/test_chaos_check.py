"""scripts/chaos_check.py catches what it claims: a clean synthetic run passes, and each
anomaly injected into a copy of it is reported by its kind (tests/chaos/run_tests.sh)."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "chaos_check.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

import chaos_check  # noqa: E402

T0 = 1700000000.0   # the run's start
AT = 1700000000     # the server's clock for every request (whole seconds)
DECL = '<?xml version="1.0" encoding="UTF-8"?>\n'
STANDBY = ("Service unavailable: this exchange server is the standby and serves nothing until "
           "it takes over; nothing was applied. Send requests to the active server")


def results(*children):
    return DECL + "<results>\n" + "".join(f"  {c}\n" for c in children) + "</results>\n"


def transactions(n, account, *children):
    return f'<transactions id="{account}"><!--op {n}-->{"".join(children)}</transactions>'


class Run:
    """A small clean run: accounts 1001 (cash 1000) and 1002 (100 shares of S1); 1001 buys 5 @
    101.50 (order 1), 1002 sells 3 @ 100 and fills 3 @ 101.5 (order 2), 1001 queries and
    cancels order 1; one op refused by the standby, one failed, one unknown never applied, one
    unknown applied (order 3, a resting sell); a kill of the active server and a takeover."""

    def __init__(self):
        self.meta = {"type": "meta", "seed": 42, "started": T0, "nemesis": "kill-active"}
        self.ops = []
        self.faults = [
            {"type": "fault", "t": T0 + 5.5, "kind": "kill-active", "action": "inject",
             "target": "server-a", "detail": "SIGKILL"},
            {"type": "fault", "t": T0 + 20.0, "kind": "kill-active", "action": "heal",
             "target": "server-a", "detail": "restarted as standby"},
        ]
        self.events = [{"type": "event", "t": T0 + 6.5, "what": "takeover",
                        "detail": "server-b took over"}]
        self.journal = []
        self.replayed = {}
        create = ('<create><!--op 1--><account id="1001" balance="1000"/>'
                  '<account id="1002" balance="0"/>'
                  '<symbol sym="S1"><account id="1002">100</account></symbol></create>')
        self.op(1, "create", None, create, "ok",
                results('<created id="1001"/>', '<created id="1002"/>',
                        '<created sym="S1" id="1002"/>'), journaled=True)
        self.op(2, "order", "1001",
                transactions(2, "1001", '<order sym="S1" amount="5" limit="101.50"/>'), "ok",
                results('<opened sym="S1" amount="5" limit="101.50" id="1"/>'), journaled=True)
        self.op(3, "order", "1002",
                transactions(3, "1002", '<order sym="S1" amount="-3" limit="100"/>'), "ok",
                results('<opened sym="S1" amount="-3" limit="100" id="2"/>'), journaled=True)
        self.op(4, "query", "1001", transactions(4, "1001", '<query id="1"/>'), "ok",
                results(f'<status id="1"><open shares="2"/>'
                        f'<executed shares="3" price="101.5" time="{AT}"/></status>'))
        self.op(5, "cancel", "1001", transactions(5, "1001", '<cancel id="1"/>'), "ok",
                results(f'<canceled id="1"><canceled shares="2" time="{AT}"/>'
                        f'<executed shares="3" price="101.5" time="{AT}"/></canceled>'),
                journaled=True)
        self.op(6, "order", "1001",
                transactions(6, "1001", '<order sym="S1" amount="1" limit="1"/>'), "refused",
                results(f"<error>{STANDBY}</error>"))
        self.op(7, "order", "1001",
                transactions(7, "1001", '<order sym="S1" amount="1" limit="1"/>'), "failed", None)
        self.op(8, "order", "1001",
                transactions(8, "1001", '<order sym="S1" amount="1" limit="1"/>'), "unknown", None)
        self.op(9, "order", "1002",
                transactions(9, "1002", '<order sym="S1" amount="-1" limit="200"/>'), "unknown",
                None, journaled=True,
                replay=results('<opened sym="S1" amount="-1" limit="200" id="3"/>'))
        # 1001 paid 3 x 101.5 = 304.5 and got 2 x 101.50 back on the cancel; 1002 holds 100 - 3
        # sold - 1 reserved by its resting sell (order 3).
        self.final = {
            "journal": self.journal,
            "orders": [
                self.order(1, "1001", "5", "101.5", "2", canceled_at=AT, execution_ids=[1]),
                self.order(2, "1002", "-3", "100", "0", execution_ids=[1]),
                self.order(3, "1002", "-1", "200", "1"),
            ],
            "executions": [{"id": 1, "buy_order": 1, "sell_order": 2, "shares": "3",
                            "price": "101.5", "executed_at": AT}],
            "accounts": [{"id": "1001", "balance": "695.5", "deposited": "1000"},
                         {"id": "1002", "balance": "304.5", "deposited": "0"}],
            "positions": [{"account_id": "1001", "symbol": "S1", "amount": "3", "granted": "0"},
                          {"account_id": "1002", "symbol": "S1", "amount": "96",
                           "granted": "100"}],
            "symbols": ["S1"],
        }

    @staticmethod
    def order(n, account, amount, limit, open_amount, canceled_at=None, execution_ids=()):
        return {"id": n, "account_id": account, "symbol": "S1", "amount": amount,
                "limit_price": limit, "open_amount": open_amount, "created_at": AT,
                "canceled_at": canceled_at, "execution_ids": list(execution_ids)}

    def op(self, n, kind, account, payload, outcome, reply, journaled=False, replay=None,
           invoke=None):
        invoke = T0 + n if invoke is None else invoke
        record = {"type": "op", "op": n, "client": n % 3, "kind": kind, "account": account,
                  "payload": payload, "tag": f"op {n}", "invoke": invoke,
                  "complete": invoke + 0.25, "outcome": outcome, "reply": reply,
                  "server": "127.0.0.1:24001"}
        self.ops.append(record)
        if journaled:
            self.journal_entry(payload)
            self.replayed[f"op {n}"] = replay if replay is not None else reply
        return record

    def journal_entry(self, request):
        self.journal.append({"seq": len(self.journal) + 1, "at": AT, "request": request})

    def op_record(self, n):
        return next(r for r in self.ops if r["op"] == n)

    def replayed_state(self):
        """What exchange-replay --final-state writes for this run: the tables' rows."""
        state = copy.deepcopy({t: self.final[t]
                               for t in ("accounts", "positions", "orders", "executions")})
        for order in state["orders"]:
            del order["execution_ids"]
        return state

    def queries(self):
        """The protocol's final <status> of every order, as the runner's queries get them."""
        fill = f'<executed shares="3" price="101.5" time="{AT}"/>'
        return {"replies": [
            results(f'<status id="1"><canceled shares="2" time="{AT}"/>{fill}</status>'),
            results(f'<status id="2">{fill}</status>', '<status id="3"><open shares="1"/></status>'),
        ]}

    def write(self, directory, replayed=True, state=None, queries=None):
        with open(os.path.join(directory, "history.jsonl"), "w") as f:
            for record in [self.meta] + self.ops + self.faults + self.events:
                f.write(json.dumps(record) + "\n")
        with open(os.path.join(directory, "final.json"), "w") as f:
            json.dump(self.final, f)
        if replayed:
            with open(os.path.join(directory, "replayed.json"), "w") as f:
                json.dump(self.replayed, f)
        for name, content in (("replayed_state.json", state), ("queries.json", queries)):
            if content is not None:
                with open(os.path.join(directory, name), "w") as f:
                    json.dump(content, f)


class CheckerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.run_ = Run()

    def check(self, replayed=True):
        self.run_.write(self.tmp.name, replayed)
        return chaos_check.check(self.tmp.name)

    def kinds(self, replayed=True):
        return [a.kind for a in self.check(replayed).anomalies]

    def assertOnly(self, kind):
        report = self.check()
        self.assertEqual([a.kind for a in report.anomalies], [kind], str(report))
        return report.anomalies[0]


class CleanRunTest(CheckerTest):
    def test_clean_run_passes(self):
        report = self.check()
        self.assertEqual(report.anomalies, [], str(report))
        self.assertEqual((report.unknown_journaled, report.unknown_not_journaled), (1, 1))

    def test_clean_run_passes_without_replayed_json(self):
        self.assertEqual(self.kinds(replayed=False), [])

    def test_report_summarises_the_run(self):
        text = str(self.check())
        self.assertIn("seed: 42", text)
        self.assertIn("ops: 9 (order 6, cancel 1, query 1, create 1)", text)
        self.assertIn("orders by type: limit 6", text)
        self.assertIn("outcomes: ok 5, refused 1, failed 1, unknown 2; unknown in the journal 1, "
                      "not 1", text)
        self.assertIn("faults injected: kill-active 1 (heals 1)", text)
        self.assertIn("+6.500s takeover: server-b took over", text)
        self.assertTrue(text.endswith("anomalies: 0"))


class AnomalyTest(CheckerTest):
    def test_lost_acknowledged_order(self):
        self.run_.op(10, "order", "1001",
                     transactions(10, "1001", '<order sym="S1" amount="1" limit="5"/>'), "ok",
                     results('<opened sym="S1" amount="1" limit="5" id="5"/>'))
        self.assertEqual(sorted(self.kinds()), ["lost-ack", "lost-order"])

    def test_acknowledged_order_journaled_but_not_stored(self):
        self.run_.op(10, "order", "1001",
                     transactions(10, "1001", '<order sym="S1" amount="1" limit="5"/>'), "ok",
                     results('<opened sym="S1" amount="1" limit="5" id="5"/>'), journaled=True)
        self.assertOnly("lost-order")

    def test_acknowledged_cancel_not_journaled(self):
        del self.run_.journal[3]   # op 5's cancel
        self.assertOnly("lost-ack")

    def test_duplicated_unknown(self):
        self.run_.journal_entry(self.run_.op_record(9)["payload"])
        anomaly = self.assertOnly("duplicate-application")
        self.assertEqual([op.tag for op in anomaly.ops], ["op 9"])

    def test_wrong_fill(self):
        self.run_.final["executions"][0]["price"] = "101"
        # The query's and the cancel's; the query also lacks the stored execution (stale-read).
        self.assertEqual(sorted(self.kinds()), ["stale-read", "wrong-fill", "wrong-fill"])

    def test_fill_not_listed_in_the_order(self):
        self.run_.final["orders"][0]["execution_ids"] = []
        self.assertEqual(self.kinds(), ["wrong-fill", "wrong-fill"])

    def test_refused_op_in_the_journal(self):
        self.run_.journal_entry(self.run_.op_record(6)["payload"])
        self.assertOnly("refused-applied")

    def test_failed_op_in_the_journal(self):
        self.run_.journal_entry(self.run_.op_record(7)["payload"])
        self.assertOnly("failed-applied")

    def test_order_id_reused(self):
        self.run_.op(10, "order", "1002",
                     transactions(10, "1002", '<order sym="S1" amount="-3" limit="100"/>'), "ok",
                     results('<opened sym="S1" amount="-3" limit="100" id="2"/>'), journaled=True)
        anomaly = self.assertOnly("order-id-reused")
        self.assertEqual([op.tag for op in anomaly.ops], ["op 3", "op 10"])

    def test_cash_conservation_break(self):
        self.run_.final["accounts"][1]["balance"] = "305.5"
        anomaly = self.assertOnly("cash-not-conserved")
        self.assertIn("deposited 1000 != balances 1001.0", anomaly.message)

    def test_share_conservation_break(self):
        self.run_.final["positions"][1]["amount"] = "95"
        self.assertOnly("shares-not-conserved")

    def test_negative_balance(self):
        self.run_.final["accounts"].append({"id": "1003", "balance": "-1", "deposited": "-1"})
        self.assertOnly("negative-balance")

    def test_replayed_reply_differs(self):
        self.run_.replayed["op 3"] = results('<opened sym="S1" amount="-3" limit="100" id="7"/>')
        self.assertOnly("replay-differs")

    def test_replayed_reply_same_modulo_whitespace_and_declaration(self):
        self.run_.replayed["op 3"] = (
            '<results><opened id="2" limit="100" amount="-3" sym="S1"/></results>')
        self.assertEqual(self.kinds(), [])

    def test_order_from_nowhere(self):
        self.run_.final["orders"].append(Run.order(9, "1001", "4", "1", "0", canceled_at=AT))
        self.assertOnly("order-from-nowhere")

    def test_unknown_op_order_counts_once(self):
        # op 9's one <order> explains one order, not two.
        self.run_.final["orders"].append(Run.order(4, "1002", "-1", "200", "0", canceled_at=AT))
        self.assertOnly("order-from-nowhere")

    def test_opened_order_with_another_limit(self):
        self.run_.final["orders"][1]["limit_price"] = "99"
        self.assertIn("order-mismatch", self.kinds())

    def test_lost_cancel(self):
        self.run_.final["orders"][0]["canceled_at"] = None
        self.run_.final["orders"][0]["open_amount"] = "0"   # else cash is not conserved either
        self.assertOnly("lost-cancel")

    def test_cancel_at_another_time(self):
        self.run_.final["orders"][0]["canceled_at"] = AT + 1
        self.assertOnly("wrong-cancel")

    def test_journal_entry_from_nowhere(self):
        self.run_.journal_entry(transactions(99, "1001", '<query id="1"/>'))
        self.assertOnly("journal-from-nowhere")

    def test_journal_entry_without_tag(self):
        self.run_.journal_entry('<transactions id="1001"><query id="1"/></transactions>')
        self.assertOnly("bad-journal-tag")

    def test_recorded_outcome_contradicting_the_reply(self):
        self.run_.op_record(6)["outcome"] = "ok"
        anomaly = self.assertOnly("outcome-mismatch")
        self.assertEqual(anomaly.ops[0].outcome, "refused")

    def test_anomaly_lists_faults_and_events_around_its_op(self):
        # op 5 runs from +5 s to +5.25 s: the kill at +5.5 s and the takeover at +6.5 s are
        # within 5 s of it, the heal at +20 s is not.
        del self.run_.journal[3]
        report = self.check()
        self.assertEqual([r.get("kind", r.get("what")) for r in report.anomalies[0].nearby],
                         ["kill-active", "takeover"])
        text = str(report)
        self.assertIn("ANOMALY 1 lost-ack: op 5 was acknowledged with <canceled id=\"1\">", text)
        self.assertIn("near: +5.500s fault kill-active inject target server-a: SIGKILL", text)
        self.assertNotIn("+20.000s", text)
        self.assertTrue(text.endswith("anomalies: 1"))


class OrderTypesTest(CheckerTest):
    """The order types of PROTOCOL 4.5-4.8 in the run: market orders with no limit, waiting
    stops, replaced orders and replaces that change nothing."""

    def market_sell(self, row=True):
        # 1002's market IOC sell of 2 finds no bid (order 1 is canceled): all 2 canceled.
        self.run_.op(10, "order", "1002",
                     transactions(10, "1002", '<order sym="S1" amount="-2" tif="IOC"/>'), "ok",
                     results('<opened sym="S1" amount="-2" tif="IOC" id="4"/>'), journaled=True)
        if row:
            self.run_.final["orders"].append(Run.order(4, "1002", "-2", None, "2",
                                                       canceled_at=AT))

    def test_market_order_with_no_limit_passes(self):
        self.market_sell()
        self.assertEqual(self.kinds(), [])
        self.assertIn("orders by type: limit 6, market-ioc 1", str(self.check()))

    def test_market_order_stored_with_a_limit(self):
        self.market_sell(row=False)
        self.run_.final["orders"].append(Run.order(4, "1002", "-2", "100", "2", canceled_at=AT))
        anomaly = self.assertOnly("order-mismatch")
        self.assertIn("limit 100", anomaly.message)

    def waiting_stop(self, stop="120"):
        # 1001 buys 1 @ 150 once an execution at 120 or more happens: 150 reserved.
        self.run_.op(10, "order", "1001",
                     transactions(10, "1001", '<order sym="S1" amount="1" limit="150" '
                                              'stop="120"/>'), "ok",
                     results('<opened sym="S1" amount="1" limit="150" stop="120" id="4"/>'),
                     journaled=True)
        row = Run.order(4, "1001", "1", "150", "1")
        row["stop_price"] = stop
        self.run_.final["orders"].append(row)
        self.run_.final["accounts"][0]["balance"] = "545.5"

    def test_waiting_stop_reserves_like_an_open_order(self):
        self.waiting_stop()
        self.assertEqual(self.kinds(), [])

    def test_waiting_stop_stored_with_another_stop(self):
        self.waiting_stop(stop="121")
        self.assertIn("stop 121", self.assertOnly("order-mismatch").message)

    def sell_and_replace(self, reply, journaled=True, position="94"):
        # 1002 sells 4 @ 300 (order 4), then replaces it: 2 left at 300 keep its place and give
        # 2 shares back.
        self.run_.op(10, "order", "1002",
                     transactions(10, "1002", '<order sym="S1" amount="-4" limit="300"/>'), "ok",
                     results('<opened sym="S1" amount="-4" limit="300" id="4"/>'),
                     journaled=True)
        self.run_.op(11, "replace", "1002",
                     transactions(11, "1002", '<replace id="4" shares="2" limit="300"/>'), "ok",
                     reply, journaled=journaled)
        self.run_.final["positions"][1]["amount"] = position

    def test_replaced_order_passes(self):
        self.sell_and_replace(results('<replaced id="4" shares="2" limit="300"/>'))
        self.run_.final["orders"].append(Run.order(4, "1002", "-2", "300", "2"))
        self.assertEqual(self.kinds(), [])

    def test_replaced_order_stored_with_the_old_amount(self):
        self.sell_and_replace(results('<replaced id="4" shares="2" limit="300"/>'))
        self.run_.final["orders"].append(Run.order(4, "1002", "-4", "300", "2"))
        self.assertIn("its last replace left 2 open", self.assertOnly("order-mismatch").message)

    def test_replaced_order_stored_with_the_old_limit(self):
        self.sell_and_replace(results('<replaced id="4" shares="2" limit="310"/>'))
        self.run_.ops[-1]["payload"] = transactions(11, "1002",
                                                    '<replace id="4" shares="2" limit="310"/>')
        self.run_.journal[-1]["request"] = self.run_.ops[-1]["payload"]
        self.run_.final["orders"].append(Run.order(4, "1002", "-2", "300", "2"))
        self.assertIn("limit 300", self.assertOnly("order-mismatch").message)

    def test_replace_to_another_limit_not_journaled(self):
        self.sell_and_replace(results('<replaced id="4" shares="4" limit="310"/>'),
                              journaled=False, position="92")
        self.run_.final["orders"].append(Run.order(4, "1002", "-4", "300", "4"))
        self.assertIn('<replaced id="4" shares="4" limit="310">',
                      self.assertOnly("lost-ack").message)

    def test_replace_that_changes_nothing_is_not_journaled(self):
        # The same limit and remainder: the engine changes nothing and journals nothing.
        self.sell_and_replace(results('<replaced id="4" shares="4" limit="300"/>'),
                              journaled=False, position="92")
        self.run_.final["orders"].append(Run.order(4, "1002", "-4", "300", "4"))
        self.assertEqual(self.kinds(), [])

    def test_refused_replace_changes_nothing(self):
        self.sell_and_replace(results('<error id="4" shares="2" limit="300">Insufficient '
                                      'shares</error>'), journaled=False, position="92")
        self.run_.final["orders"].append(Run.order(4, "1002", "-4", "300", "4"))
        self.assertEqual(self.kinds(), [])


class PartsTest(unittest.TestCase):
    def test_tags_parse_from_comments(self):
        self.assertEqual(chaos_check.tags_in(transactions(17, "1003", '<query id="1"/>')),
                         ["op 17"])
        self.assertEqual(chaos_check.tags_in(
            '<?xml version="1.0"?>\n<create>\n  <!--  op   4 -->\n  <!-- not a tag -->\n'
            '  <account id="1" balance="1"/>\n</create>'), ["op 4"])
        self.assertEqual(chaos_check.tags_in('<create><!--op 1--><!--op 2--></create>'),
                         ["op 1", "op 2"])
        self.assertEqual(chaos_check.tags_in('<create><account id="1" balance="1"/></create>'), [])

    def test_decimals_compare_exactly(self):
        self.assertTrue(chaos_check.same_decimal("101.50", "101.5"))
        self.assertTrue(chaos_check.same_decimal("-3", "-3.000000"))
        self.assertFalse(chaos_check.same_decimal("0.1", "0.10000000000000001"))
        self.assertFalse(chaos_check.same_decimal("abc", "abc"))

    def test_replies_classified(self):
        classify = chaos_check.classify_reply
        self.assertIsNone(classify(None))
        self.assertEqual(classify(results(f"<error>{STANDBY}</error>")), "refused")
        self.assertEqual(classify(results("<error>Server busy: retry later</error>")), "refused")
        self.assertEqual(classify(results(
            "<error>Internal error: the database connection broke while this request was being "
            "committed, and the database could not be asked whether it was; query your orders "
            "before retrying</error>")), "unknown")
        # A parse reject names an "unknown" element, and applied nothing.
        self.assertEqual(classify(results("<error>Unknown root element 'x'</error>")), "refused")
        self.assertEqual(classify(results('<error sym="X" amount="1" limit="1">Unknown symbol'
                                          '</error>')), "ok")
        self.assertEqual(classify(results('<opened sym="S1" amount="1" limit="1" id="1"/>')), "ok")
        self.assertEqual(classify("<results><err"), "unknown")


class CommandLineTest(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_exit_codes(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = Run()
            run.write(tmp)
            clean = self.run_cli(tmp)
            self.assertEqual(clean.returncode, 0, clean.stdout + clean.stderr)
            self.assertIn("anomalies: 0", clean.stdout)
            broken = copy.deepcopy(run)
            broken.final["accounts"][0]["balance"] = "0"
            broken.write(tmp)
            self.assertEqual(self.run_cli(tmp).returncode, 1)
            os.remove(os.path.join(tmp, "final.json"))
            missing = self.run_cli(tmp)
            self.assertEqual(missing.returncode, 2)
            self.assertIn("final.json", missing.stderr)
            with open(os.path.join(tmp, "final.json"), "w") as f:
                f.write("{not json")
            self.assertEqual(self.run_cli(tmp).returncode, 2)

    def test_bad_rows_are_unreadable_input(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = Run()
            run.final["orders"][0]["amount"] = "five"
            run.write(tmp)
            self.assertEqual(self.run_cli(tmp).returncode, 2)
            run = Run()
            run.op_record(4)["tag"] = "op 44"   # its payload carries op 4
            run.write(tmp)
            self.assertEqual(self.run_cli(tmp).returncode, 2)

    def test_help(self):
        result = self.run_cli("--help")
        self.assertEqual(result.returncode, 0)
        self.assertIn("RUN_DIR", result.stdout)
        self.assertIn("history.jsonl", result.stdout)


if __name__ == "__main__":
    unittest.main()
