"""What a guard decides for one node, as sdpacheck records it
(harness/ir/shape_env.h): the rules in the order evaluated, the facts it
assumed on the export hints, rewrite or keep; and the rewrite control
sdpacheck sends (nodes forced past their guard, nodes held)."""

from .symbolic import Fact, SymExpr


class RuleOutcome:
    __slots__ = ("rule", "passed", "detail")

    def __init__(self, rule, passed, detail=""):
        self.rule, self.passed, self.detail = rule, bool(passed), detail


class Assumption:
    """A fact taken as true because it holds on the hints, not for every size."""

    __slots__ = ("fact", "rule")

    def __init__(self, fact, rule):
        self.fact, self.rule = fact, rule


class Decision:
    __slots__ = ("node", "rewrite", "deciding_rule", "rules", "assumptions")

    def __init__(self, node, rewrite, deciding_rule, rules, assumptions):
        self.node, self.rewrite, self.deciding_rule = node, rewrite, deciding_rule
        self.rules, self.assumptions = rules, assumptions

    def to_json(self):
        from .graph_json import size_to_json

        return {
            "node": self.node,
            "rewrite": self.rewrite,
            "deciding_rule": self.deciding_rule,
            "rules": [{"rule": r.rule, "passed": r.passed, "detail": r.detail} for r in self.rules],
            "assumptions": [
                {"lhs": size_to_json(a.fact.lhs), "rel": a.fact.rel, "rhs": size_to_json(a.fact.rhs), "rule": a.rule}
                for a in self.assumptions
            ],
        }


class GuardContext:
    """Records rule outcomes and hint assumptions while a guard runs on node
    `node` (written "%name")."""

    def __init__(self, env, node):
        self.env = env
        self.node = node
        self.rules = []
        self.assumptions = []
        self.deciding_rule = ""

    def known(self, fact):
        """True when the fact holds for every size in range."""
        return self.env.statically_known(fact)

    def on_hint(self, fact, rule):
        """True when the fact holds on the hints; records it as an assumption
        unless it is statically known. False for unbacked symbols."""
        if self.env.statically_known(fact):
            return True
        v = self.env.on_hint(fact)
        if not v:
            return False
        self.assumptions.append(Assumption(fact, rule))
        return True

    def rule(self, name, passed, detail=""):
        """Records a rule's outcome; returns `passed`, so a guard reads `if not guard.rule(...)`."""
        passed = bool(passed)
        self.rules.append(RuleOutcome(name, passed, detail))
        if not passed and not self.deciding_rule:
            self.deciding_rule = name
        return passed

    def finish(self):
        rewrite = not self.deciding_rule
        return Decision(self.node, rewrite, "accept" if rewrite else self.deciding_rule, self.rules, self.assumptions)


class RewriteControl:
    """Which nodes the pass rewrites: those its guard accepts, and the forced
    ones (all with force_all), never a held one. sdpacheck checks the
    graph returned honours it."""

    def __init__(self, force_all=False, forced=(), held=()):
        self.force_all, self.forced, self.held = force_all, set(forced), set(held)

    def rewrites(self, decision):
        if decision.node in self.held:
            return False
        return decision.rewrite or self.force_all or decision.node in self.forced


__all__ = ["Assumption", "Decision", "Fact", "GuardContext", "RewriteControl", "RuleOutcome", "SymExpr"]
