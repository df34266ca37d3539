//! Which Apache Kafka release the model follows where releases differ. The model is Kafka
//! 3.1.0's classic consumer; a scenario replaying a bug that lived in another release selects
//! that release's code path here, modelled from that release's source like the rest.

/// A release of the classic consumer whose code path the model can follow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LegacyVersion {
    /// Trunk during 0.10.1's development, between KIP-62's heartbeat thread (40b1dd3f495) and
    /// KAFKA-4160's fix (f197ad49970, before the 0.10.1.0 release): `ensureActiveGroup` was
    /// `synchronized`, so the rebalance listener ran holding the coordinator monitor the
    /// heartbeat thread needs. Modelled where it matters: the callbacks hold the lock.
    Kip62Trunk,
    /// 0.9.0.0, before KAFKA-2942's fix (13e483adeee, shipped in 0.9.0.1): the auto-commit is
    /// a `DelayedTask` that any `client.poll` runs once due — including the `client.poll(0)`
    /// `KafkaConsumer.poll` makes to pipeline the next fetches *after* `fetchedRecords()` has
    /// moved the consumed positions past the records it is about to return (0.9.0.1's
    /// `quickPoll()` runs no delayed task there). Otherwise 3.1.0's paths.
    V0_9_0_0,
    /// 1.0.0, before KAFKA-6362's fix (ac267dc5cec, shipped in 1.1.0):
    /// `maybeAutoCommitOffsetsAsync` skips the auto-commit while the coordinator is unknown —
    /// it only pushes `nextAutoCommitDeadline` back by `retry.backoff.ms` — instead of going
    /// through `commitOffsetsAsync`, which looks for the coordinator. Manual assignment's
    /// `ConsumerCoordinator.poll` never looks for it either, so once a commit marks the
    /// coordinator unknown nothing finds it again. Otherwise 3.1.0's paths.
    V1_0_0,
    /// 2.5.0 (KAFKA-8421, "still return data during rebalance"): `poll` runs
    /// `updateAssignmentMetadataIfNeeded` with a zero timer, so coordinator discovery never
    /// waits either; with the coordinator gone the heartbeat timer expires, `timeToNextPoll` is
    /// zero and `poll` spins (KAFKA-10134, fixed in 2.5.1 / 2.6.0). Otherwise 3.1.0's paths.
    V2_5_0,
    /// 2.3.0, before KAFKA-8104's fix (00374c3ddf6, shipped in 2.4.0): once the join future has
    /// succeeded, `joinGroupIfNeeded` passes the `generation` field as it is to
    /// `onJoinComplete`, whose `lookupAssignor(generation.protocol)` throws
    /// `IllegalStateException` if the heartbeat thread has reset it meanwhile; the join future
    /// is reset only after `onJoinComplete` returns, so every later `poll` finds the same
    /// succeeded future and throws again. Otherwise 3.1.0's paths.
    V2_3_0,
    /// 2.6.1, the last 2.6 release before KAFKA-10793's fix (1ab5e392e7b, shipped in 2.6.2,
    /// 2.7.1 and 2.8.0): `FindCoordinatorResponseHandler` clears `findCoordinatorFuture` as
    /// the first thing it does, on success and on failure, and nothing else clears it —
    /// `ensureCoordinatorReady` does not, and the heartbeat thread backs off as long as the
    /// field is set (`findCoordinatorFuture != null || lookupCoordinator().failed()`). The
    /// handler is chained by `compose` after `client.send` has queued the request; when the
    /// request has already completed by then, it runs at once, before `lookupCoordinator`
    /// stores the future, and the stored future is one that has already failed. Otherwise
    /// 3.1.0's paths (2.6.1 already has 3.1's member states).
    V2_6_1,
    /// 3.1.0: `onJoinPrepare` commits synchronously, retrying for up to the rebalance timeout,
    /// then revokes (KAFKA-13310).
    #[default]
    V3_1_0,
    /// 3.2.0 (KAFKA-13310's fix): `onJoinPrepare` sends a new asynchronous auto-commit on every
    /// call, looks at it once, and revokes whether or not it completed; a retriable failure is
    /// never retried for the revoked partitions (KAFKA-14024).
    V3_2_0,
    /// 3.2.1–3.2.2 (KAFKA-14024's fix): one pre-revocation commit in flight, awaited within the
    /// poll's timer on each call and retried until done or the rebalance timeout; revocation
    /// waits for it, but the fetcher goes on returning the partitions' records meanwhile
    /// (KAFKA-14196, fixed in 3.2.3 by marking them pending revocation).
    V3_2_1,
    /// 3.4.0, the first of the two releases the model runs the cooperative protocol for (when
    /// every assignor of `partition.assignment.strategy` supports it, as KIP-429's
    /// `CooperativeStickyAssignor` does): the JoinGroup subscription carries the owned partitions and the member's current generation
    /// (ConsumerProtocol v2, KIP-792); `onJoinPrepare` revokes nothing while the generation is
    /// valid; `onJoinComplete` revokes owned − assigned first, then rejoins; a SyncGroup
    /// `REBALANCE_IN_PROGRESS` keeps the generation (KAFKA-13419's fix, KAFKA-13891 reverted);
    /// the leader's `AbstractStickyAssignor.allSubscriptionsEqual` honours only the owned
    /// partitions of members of the highest generation (KAFKA-14639, fixed in 3.4.1 / 3.5.0 by
    /// letting the highest generation *claiming a partition* win). The pre-revocation commit
    /// is 3.2.1's, with KAFKA-14196's fix: an eager member marks its partitions pending
    /// revocation while it commits.
    V3_4_0,
    /// 3.4.1 (KAFKA-14639's fix, ae722570288): 3.4.0 with every ownership claim honoured, the
    /// highest generation winning where claims collide — what the production assignors do.
    V3_4_1,
}

impl LegacyVersion {
    /// Whether the model runs the cooperative protocol on this release when every configured
    /// assignor supports it; the other releases run eager only (their cooperative paths are
    /// not modelled), leaving cooperative assignors out.
    pub fn models_cooperative(self) -> bool {
        self.is_3_4()
    }

    /// 3.4.0 or 3.4.1: the subscription carries owned partitions and generation, `onJoinPrepare`
    /// treats either half of a reset generation as lost, and the pre-revocation commit marks
    /// eager partitions pending revocation.
    pub fn is_3_4(self) -> bool {
        matches!(self, Self::V3_4_0 | Self::V3_4_1)
    }
}
