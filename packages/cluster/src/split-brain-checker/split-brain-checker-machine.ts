import { type ActorSystem, enqueueDecision, type Message, type NodeAddress } from '@doyen/core';
import { setup } from 'xstate';
import type { ClusterConfig } from '../model/config.js';
import { SPLIT_BRAIN_CHECKER_PATH } from '../model/system-actors.js';
import {
  answerProbe,
  type CheckerContext,
  type CheckerEffect,
  type CheckerEnv,
  type CheckerStep,
  followMerge,
  initialCheckerContext,
  obeysMerge,
  probeRound,
  replyMerges,
  shouldProbe,
  startMerge,
  stopsProbing,
  takeView,
} from './split-brain-checker-decisions.js';
import type {
  Merge,
  Probe,
  ProbeReply,
  SbcView,
  SplitBrainCheckerEvent,
} from './split-brain-checker-messages.js';

export interface SplitBrainCheckerDeps {
  readonly system: ActorSystem;
  readonly config: ClusterConfig;
  readonly selfAddress: string;
  readonly probeIntervalMs: number;
  /** The edge restarts this node as a new incarnation joining through `seeds`. */
  readonly rejoin: (seeds: readonly NodeAddress[], reason: 'merge') => void;
}

/**
 * The seed's split-brain recovery for `auto` downing: the coordinator keeps probing the
 * addresses of failed members; when one answers as the coordinator of another sub-cluster, the
 * smaller side's coordinator tells its members to merge, and each restarts as a new incarnation
 * that joins the larger side. Idle under the resolver strategies (there the minority is down).
 * Decisions are the pure functions of split-brain-checker-decisions.ts; the action `run` carries
 * out their effects (the only code here with I/O).
 */
export function createSplitBrainCheckerMachine(deps: SplitBrainCheckerDeps) {
  const { system, config } = deps;
  const env: CheckerEnv = { self: system.node, selfAddress: deps.selfAddress, seeds: config.seeds };
  const peer = (node: NodeAddress) => system.anyIncarnationRef(node, SPLIT_BRAIN_CHECKER_PATH);

  const execute = (effect: CheckerEffect): void => {
    switch (effect.kind) {
      case 'probe': {
        if (effect.targets.length === 0) return;
        const probe: Probe = {
          type: 'sbc.probe',
          coordinator: system.node,
          size: effect.size,
          replyTo: system.remoteRef(system.node, SPLIT_BRAIN_CHECKER_PATH),
        };
        for (const target of effect.targets) peer(target).send(probe);
        return;
      }
      case 'reply':
        effect.to.send(effect.reply as ProbeReply & Message);
        return;
      case 'order-merge':
        for (const address of effect.to) peer(address).send(effect.merge);
        return;
      case 'rejoin':
        if (effect.graceMs === undefined) deps.rejoin(effect.seeds, 'merge');
        else system.clock.setTimeout(() => deps.rejoin(effect.seeds, 'merge'), effect.graceMs);
        return;
      case 'log':
        system.logger[effect.level]({ event: effect.event, ...effect.fields }, effect.msg);
        return;
    }
  };

  const machineSetup = setup({
    types: {
      context: {} as CheckerContext,
      events: {} as SplitBrainCheckerEvent,
    },
    actions: {
      run: (_, effect: CheckerEffect) => execute(effect),
    },
    delays: { probeInterval: deps.probeIntervalMs },
    guards: {
      shouldProbe: ({ context }) => shouldProbe(context),
      stopsProbing: ({ context }) => stopsProbing(context),
      replyMerges: ({ context, event }) => replyMerges(env, context, event as ProbeReply),
      obeysMerge: ({ context, event }) => obeysMerge(context, event as Merge),
    },
  });

  /** Applies a decision: its context assigned, its effects to `run`. */
  const apply = (step: (context: CheckerContext, event: SplitBrainCheckerEvent) => CheckerStep) =>
    machineSetup.enqueueActions(({ context, event, enqueue }) =>
      enqueueDecision(enqueue, context, step(context, event)),
    );
  const takeViews = { 'sbc.view': { actions: apply((c, e) => takeView(c, e as SbcView)) } };

  return machineSetup.createMachine({
    id: 'splitBrainChecker',
    context: initialCheckerContext,
    initial: config.downing === 'auto' ? 'idle' : 'inactive',
    states: {
      inactive: {},
      idle: {
        always: { guard: 'shouldProbe', target: 'probing' },
        on: takeViews,
      },
      probing: {
        always: { guard: 'stopsProbing', target: 'idle' },
        on: takeViews,
        after: {
          probeInterval: { target: 'probing', reenter: true, actions: apply((c) => probeRound(c)) },
        },
      },
      merging: {},
    },
    on: {
      'sbc.probe': { actions: apply((c, e) => answerProbe(env, c, e as Probe)) },
      'sbc.probe-reply': {
        guard: 'replyMerges',
        target: '.merging',
        actions: apply((c, e) => startMerge(env, c, e as ProbeReply)),
      },
      'sbc.merge': {
        guard: 'obeysMerge',
        target: '.merging',
        actions: apply((c, e) => followMerge(c, e as Merge)),
      },
    },
  });
}

export type SplitBrainCheckerMachine = ReturnType<typeof createSplitBrainCheckerMachine>;
