"""The flow walk: each node is analysed once, against the flow that reaches it, and returns
its effects for the node after it.

This module only sequences the walk (children in order, routes of a choice, branches of a
par, the body of a loop or map); each check lives in the module that owns it.
"""

from __future__ import annotations

from zeroshot_kernel.admission.binding_checks import check_input_bindings, check_write_bindings
from zeroshot_kernel.admission.choices import Refinement, route_choice
from zeroshot_kernel.admission.effects import Effects, merge_alternatives, merge_conditional
from zeroshot_kernel.admission.facts import (
    compose_writes,
    merge_outcome_writes,
    merge_possible_types,
    par_definition,
    retain_definitions,
    unowned_writes,
)
from zeroshot_kernel.admission.locations import Loc, at
from zeroshot_kernel.admission.loops import check_loop_exit
from zeroshot_kernel.admission.maps import (
    indexed_targets,
    item_type,
    map_effects,
    record_executions,
)
from zeroshot_kernel.admission.parallel import check_join, check_parallel_writes, merge_join
from zeroshot_kernel.admission.predicates import ALWAYS, Predicate, conjoin
from zeroshot_kernel.admission.promotions import Rule, restrict_promotions
from zeroshot_kernel.admission.typepaths import fits_with_definitions
from zeroshot_kernel.admission.verifier_state import Scope, VerifierState
from zeroshot_kernel.contract.graph import (
    AllJoin,
    ChoiceNode,
    FailNode,
    GraphNode,
    LoopNode,
    MapNode,
    ParNode,
    SeqNode,
    StepNode,
    SucceedNode,
    VerifierNode,
)


class FlowWalk:
    def __init__(self, run: VerifierState) -> None:
        self.run = run

    def visit(self, node: GraphNode, scope: Scope) -> Effects:
        loc = self.run.index.location(node.name)
        if isinstance(node, StepNode | VerifierNode):
            effects = self._executable(node, scope, loc)
        elif isinstance(node, SucceedNode):
            check_input_bindings(
                self.run,
                node.bindings,
                node.output,
                scope,
                loc,
                collection="bindings",
                payload_field="output",
            )
            effects = _terminal(node, scope)
        elif isinstance(node, FailNode):
            effects = _terminal(node, scope)
        else:
            if not fits_with_definitions(scope.state, node.state, scope.incoming.defined):
                self.run.emit(
                    "schema_safety",
                    "the state reaching this group does not fit its declared state; declare "
                    "a state that the incoming state is a subtype of",
                    at(loc, "state"),
                    [node.name],
                )
            if isinstance(node, SeqNode):
                effects = self._seq(node, scope, loc)
            elif isinstance(node, ChoiceNode):
                effects = self._choice(node, scope, loc)
            elif isinstance(node, ParNode):
                effects = self._par(node, scope, loc)
            elif isinstance(node, LoopNode):
                effects = self._loop(node, scope, loc)
            else:
                effects = self._map(node, scope, loc)
        self.run.completions[node.name] = effects.completion
        self.run.fallthrough[id(node)] = effects.falls_through
        return effects

    def _executable(self, node: StepNode | VerifierNode, scope: Scope, loc: Loc) -> Effects:
        check_input_bindings(
            self.run,
            node.input_bindings,
            node.input,
            scope,
            loc,
            collection="inputBindings",
            payload_field="input",
        )
        writes = check_write_bindings(self.run, node, scope, loc)
        return Effects(
            definite_nodes={node.name},
            possible_writes=dict(writes),
            possible_types={path: [fact.value_type] for path, fact in writes.items()},
            outcome_writes={node.name: dict(writes)} if writes else {},
            outcome_order=[node.name] if writes else [],
            exit_failed=scope.incoming.failed | {node.name},
            falls_through=True,
            completion=ALWAYS,
        )

    def _seq(self, group: SeqNode, scope: Scope, loc: Loc) -> Effects:
        flow = scope.incoming.copy()
        effects = Effects()
        falls_through = True
        completion: Predicate = ALWAYS
        decided = self.run.conjunction(loc)
        for child in group.children:
            child_effects = self.visit(child, scope.entering(flow, group.state))
            if falls_through:
                flow.absorb(child_effects)
            completion = conjoin([completion, child_effects.completion])
            falls_through = (
                falls_through
                and child_effects.falls_through
                and decided.add(child_effects.completion) is not False
            )
            effects.definite_nodes |= child_effects.definite_nodes
            compose_writes(effects.definite_writes, child_effects.definite_writes)
            effects.possible_writes.update(child_effects.possible_writes)
            merge_possible_types(effects.possible_types, child_effects.possible_types)
            merge_outcome_writes(
                effects.outcome_writes,
                effects.outcome_order,
                child_effects.outcome_writes,
                child_effects.outcome_order,
            )
            effects.definitions = [
                *retain_definitions(
                    effects.definitions, child_effects.definite_writes, child_effects.definitions
                ),
                *child_effects.definitions,
            ]
            effects.unavailable_nodes |= child_effects.unavailable_nodes
            merge_conditional(effects.conditional_nodes, child_effects.conditional_nodes)
            if falls_through:
                effects.settle(flow.failed)
        effects.exit_failed = set(flow.failed)
        effects.falls_through = falls_through
        effects.completion = completion
        effects.definite_nodes.add(group.name)
        self._promote(group, effects, scope, loc, Rule.DEFINITE)
        return effects

    def _choice(self, group: ChoiceNode, scope: Scope, loc: Loc) -> Effects:
        routes = route_choice(self.run, group, scope.incoming, loc)
        self.run.reach[group.name] = routes.reach
        alternatives = [
            self._route(group, branch.node, refinement, condition, scope, loc)
            for branch, reachable, refinement, condition in zip(
                group.branches,
                routes.reachable,
                routes.refinements,
                routes.completions,
                strict=True,
            )
            if reachable
        ]
        if group.otherwise is not None and routes.otherwise_reachable:
            alternatives.append(
                self._route(
                    group,
                    group.otherwise,
                    routes.otherwise,
                    routes.otherwise_completion,
                    scope,
                    loc,
                )
            )
        elif not routes.exhaustive:
            alternatives.append(
                Effects(
                    unavailable_nodes=set(scope.incoming.unavailable),
                    exit_failed=set(scope.incoming.failed),
                    falls_through=True,
                    completion=routes.otherwise_completion,
                )
            )
        effects = merge_alternatives(alternatives)
        effects.definite_nodes.add(group.name)
        self._promote(group, effects, scope, loc, Rule.EVERY_ALTERNATIVE)
        return effects

    def _route(
        self,
        group: ChoiceNode,
        node: GraphNode,
        refinement: Refinement,
        condition: Predicate,
        scope: Scope,
        loc: Loc,
    ) -> Effects:
        flow = refinement.applied_to(scope.incoming)
        effects = self.visit(node, scope.entering(flow, group.state))
        effects.completion = conjoin([condition, effects.completion])
        effects.falls_through = (
            effects.falls_through and self.run.satisfiable(effects.completion, loc) is not False
        )
        effects.unavailable_nodes |= flow.unavailable
        return effects

    def _par(self, group: ParNode, scope: Scope, loc: Loc) -> Effects:
        check_join(self.run, group, scope.incoming, loc)
        branches = [
            self.visit(branch, scope.entering(scope.incoming, group.state))
            for branch in group.branches
        ]
        check_parallel_writes(self.run, group, branches, loc)
        effects = merge_join(self.run, group, branches, scope.incoming, loc)
        joined_only = set(effects.definite_nodes)
        effects.definite_nodes.add(group.name)
        effects.conditional_nodes.setdefault(group.name, set()).update(joined_only)
        rule = Rule.DEFINITE if isinstance(group.join, AllJoin) else Rule.EVERY_ALTERNATIVE
        self._promote(group, effects, scope, loc, rule)
        own_writes = unowned_writes(effects.definite_writes, effects.definitions)
        definition = par_definition(group.name, scope.incoming.defined, own_writes)
        if definition is not None:
            effects.definitions.append(definition)
        effects.exit_failed.add(group.name)
        return effects

    def _loop(self, group: LoopNode, scope: Scope, loc: Loc) -> Effects:
        effects = self.visit(group.body, scope.entering(scope.incoming, group.state))
        check_loop_exit(self.run, group, scope.incoming.available, effects, loc)
        effects.definite_nodes.add(group.name)
        self._promote(group, effects, scope, loc, Rule.DEFINITE)
        return effects

    def _map(self, group: MapNode, scope: Scope, loc: Loc) -> Effects:
        inherited, own = indexed_targets(self.run, group, scope, loc)
        element = item_type(self.run, group, scope, loc)
        body = self.visit(group.body, Scope(scope.incoming, group.state, element, inherited))
        record_executions(self.run, group)
        effects = map_effects(group, scope.incoming, body, own)
        self._promote(group, effects, scope, loc, Rule.MAP)
        return effects

    def _promote(
        self,
        group: SeqNode | ChoiceNode | ParNode | LoopNode | MapNode,
        effects: Effects,
        scope: Scope,
        loc: Loc,
        rule: Rule,
    ) -> None:
        restrict_promotions(
            self.run,
            effects,
            group_state=group.state,
            enclosing_state=scope.state,
            promoted=group.promoted_state_paths,
            rule=rule,
            overrides=scope.indexed,
            loc=loc,
        )


def _terminal(node: SucceedNode | FailNode, scope: Scope) -> Effects:
    """A terminal ends the run: it never completes normally."""
    return Effects(definite_nodes={node.name}, exit_failed=set(scope.incoming.failed))
