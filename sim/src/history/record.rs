//! The builders: one method per event kind, so the world and the tests record an
//! event in one short call; each ends in [`History::record`], which keeps the
//! history's invariants. Here the clients' events and the world's own (crashes,
//! restarts, faults, heal); what it read of the engine and the disk in `observe.rs`.

use super::*;

impl History {
    pub fn produce_attempt(
        &mut self,
        at_ms: u64,
        id: ProduceId,
        topic: &str,
        partition: Option<u32>,
        key: &[u8],
        payload: &[u8],
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::ProduceAttempt {
                id,
                topic: topic.to_owned(),
                partition,
                key: key.to_vec(),
                payload: payload.to_vec(),
            },
        )
    }

    pub fn produce_ack(
        &mut self,
        at_ms: u64,
        id: ProduceId,
        tp: &TopicPartition,
        offset: Option<Offset>,
        committed_at_ms: Option<u64>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::ProduceAck {
                id,
                tp: tp.clone(),
                offset,
                committed_at_ms,
            },
        )
    }

    pub fn produce_failed(&mut self, at_ms: u64, id: ProduceId, error: &str) -> &mut Self {
        self.record(
            at_ms,
            EventKind::ProduceFailed {
                id,
                error: error.to_owned(),
            },
        )
    }

    #[expect(clippy::too_many_arguments, reason = "mirrors the Delivery fields")]
    pub fn delivery(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        offset: Offset,
        key: &[u8],
        payload: &[u8],
        committed_at_ms: u64,
        attempt: u32,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::Delivery {
                tp: tp.clone(),
                offset,
                key: key.to_vec(),
                payload: payload.to_vec(),
                committed_at_ms,
                attempt,
                asked_at_ms: None,
            },
        )
    }

    /// Sets when the consumer asked for the delivery just recorded.
    pub fn asked_at(&mut self, asked_at_ms: u64) -> &mut Self {
        match self.events.last_mut().map(|e| &mut e.kind) {
            Some(EventKind::Delivery {
                asked_at_ms: asked, ..
            }) => *asked = Some(asked_at_ms),
            _ => panic!("asked_at follows a delivery"),
        }
        self
    }

    pub fn ack(&mut self, at_ms: u64, tp: &TopicPartition, offset: Offset) -> &mut Self {
        self.record(
            at_ms,
            EventKind::Ack {
                tp: tp.clone(),
                offset,
            },
        )
    }

    pub fn nack(&mut self, at_ms: u64, tp: &TopicPartition, offset: Offset) -> &mut Self {
        self.record(
            at_ms,
            EventKind::Nack {
                tp: tp.clone(),
                offset,
            },
        )
    }

    pub fn frontier_written(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        frontier: Offset,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::FrontierWritten {
                tp: tp.clone(),
                frontier,
            },
        )
    }

    pub fn hwm_write_issued(&mut self, at_ms: u64, tp: &TopicPartition, word: Offset) -> &mut Self {
        self.record(
            at_ms,
            EventKind::HwmWriteIssued {
                tp: tp.clone(),
                word,
            },
        )
    }

    pub fn hwm_write_lowered(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        word: Offset,
        highest: Offset,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::HwmWriteLowered {
                tp: tp.clone(),
                word,
                highest,
            },
        )
    }

    pub fn frontier_observed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        frontier: Offset,
    ) -> &mut Self {
        self.frontier_opened(at_ms, tp, None, frontier)
    }

    /// An open came up and left `frontier` in `consumer.offset`; the restart before it
    /// found `found` there.
    pub fn frontier_opened(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        found: Option<Offset>,
        frontier: Offset,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::FrontierObserved {
                tp: tp.clone(),
                frontier,
                loaded: None,
                found,
            },
        )
    }

    /// A recovered frontier: the file's value and the one the engine loaded from it.
    pub fn frontier_loaded(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        frontier: Offset,
        loaded: Offset,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::FrontierObserved {
                tp: tp.clone(),
                frontier,
                loaded: Some(loaded),
                found: None,
            },
        )
    }

    /// Records the power loss that ends the current incarnation.
    pub fn crash(&mut self, at_ms: u64, partitions: Vec<CrashPartition>) -> &mut Self {
        self.record(
            at_ms,
            EventKind::Crash {
                partitions,
                process: false,
            },
        )
    }

    /// Records the process crash that ends the current incarnation (the page cache
    /// survives it).
    pub fn process_crash(&mut self, at_ms: u64, partitions: Vec<CrashPartition>) -> &mut Self {
        self.record(
            at_ms,
            EventKind::Crash {
                partitions,
                process: true,
            },
        )
    }

    /// Records the start of the next incarnation.
    pub fn restart(&mut self, at_ms: u64) -> &mut Self {
        self.record(at_ms, EventKind::Restart)
    }

    pub fn deliveries_unclaimed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        offsets: Vec<Offset>,
        ids: Vec<Option<ProduceId>>,
        asked_at_ms: u64,
    ) -> &mut Self {
        assert_eq!(offsets.len(), ids.len(), "one id per unclaimed offset");
        self.record(
            at_ms,
            EventKind::DeliveriesUnclaimed {
                tp: tp.clone(),
                offsets,
                ids,
                asked_at_ms: Some(asked_at_ms),
            },
        )
    }

    pub fn frontier_skipped(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        from: Offset,
        to: Offset,
        held: Vec<HeldCopy>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::FrontierSkipped {
                tp: tp.clone(),
                from,
                to,
                held,
            },
        )
    }

    /// The last value an incarnation before `incarnation` wrote to `tp`'s
    /// `consumer.offset`, if any (what a restart should find there).
    pub fn last_frontier_written_before(
        &self,
        tp: &TopicPartition,
        incarnation: Incarnation,
    ) -> Option<Offset> {
        self.events.iter().rev().find_map(|e| match &e.kind {
            EventKind::FrontierWritten { tp: t, frontier }
                if t == tp && e.incarnation < incarnation =>
            {
                Some(*frontier)
            }
            _ => None,
        })
    }

    pub fn receive_killed(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        asked_at_ms: u64,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::ReceiveKilled {
                tp: tp.clone(),
                asked_at_ms,
            },
        )
    }

    pub fn receive_empty(
        &mut self,
        at_ms: u64,
        tp: &TopicPartition,
        asked_at_ms: u64,
        error: Option<String>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::ReceiveEmpty {
                tp: tp.clone(),
                asked_at_ms,
                error,
            },
        )
    }

    pub fn fault(
        &mut self,
        at_ms: u64,
        kind: FaultKind,
        tp: Option<&TopicPartition>,
        path: Option<&str>,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::Fault {
                kind,
                tp: tp.cloned(),
                path: path.map(str::to_owned),
            },
        )
    }

    /// Records the run's setup (first, before anything else).
    pub fn run_started(
        &mut self,
        at_ms: u64,
        wall_base_ms: u64,
        topics: Vec<TopicSetup>,
        io_latency_max_ms: u64,
        frontier_persist_ms: Option<u64>,
        frontier_loads_reported: bool,
    ) -> &mut Self {
        self.record(
            at_ms,
            EventKind::RunStarted {
                wall_base_ms,
                topics,
                io_latency_max_ms,
                frontier_persist_ms,
                frontier_loads_reported,
            },
        )
    }

    pub fn heal(&mut self, at_ms: u64) -> &mut Self {
        self.record(at_ms, EventKind::Heal)
    }
}
