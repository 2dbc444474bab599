//! How often each interesting path was reached in a run: what a sweep sums and a
//! corpus entry's `reaches` asks for.

/// How often each interesting path was reached in a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Paths {
    pub crashes: u64,
    /// Kills that were process crashes (the page cache survived); also in `crashes`.
    pub process_crashes: u64,
    pub crashes_after_commit: u64,
    pub torn_tails_truncated: u64,
    /// Partitions opened with preallocated zeros after their last frame.
    pub zero_tails_at_open: u64,
    pub holes_truncated: u64,
    /// Records past an R2 hole with no live WAL entry (gone, or passed by the
    /// checkpoint), kept by the salvage.
    pub records_salvaged: u64,
    /// Of those, records whose entry the checkpoint had passed, kept as a revival linked
    /// to it.
    pub salvage_revivals: u64,
    /// Records past an R2 hole whose WAL entry was there, given a salvage copy.
    pub salvage_copies: u64,
    /// WAL entries damage destroyed while a salvage copy of theirs (or the entry a
    /// destroyed copy copied) stayed readable: named as no loss.
    pub wal_entries_saved_by_copy: u64,
    pub refusals: u64,
    /// Topics whose topic.conf an open could not read.
    pub topics_refused: u64,
    pub recorded_clamps: u64,
    pub hidden_records: u64,
    pub duplicates_exposed: u64,
    pub records_skipped: u64,
    pub partitions_poisoned: u64,
    pub segments_reaped: u64,
    pub leases_expired: u64,
    /// Deliveries of a record leased before (after a nack or an expired lease).
    pub redeliveries: u64,
    pub delay_gates_held: u64,
    /// Long-poll receives that parked and were woken with records (each wait timed by
    /// `woken_promptly`).
    pub parked_receives_woken: u64,
    /// Records that became deliverable while a receive was parked, each timed by
    /// `woken_promptly`.
    pub wakeups_timed: u64,
    /// Deliveries of records of delayed topics (each checked by `delay_gate`).
    pub delayed_delivered: u64,
    /// Frontiers loaded at an open after the engine had persisted one (each held to it
    /// by `frontier_durable`).
    pub frontiers_recovered: u64,
    /// Frontiers the engine loaded on a client's first touch of the partition after
    /// its store came up (the spec's lazy load), not at the world's ask during the open.
    pub frontiers_loaded_on_touch: u64,
    /// Segment rolls judged by `layout` (a segment and its successor's first frame).
    pub rolls_judged: u64,
    pub wal_replayed: u64,
    /// Runs whose WAL listing at the end `wal_progress` judged (quiet long enough).
    pub wal_ends_judged: u64,
    /// Partitions with retention whose listing at the end held a sealed segment, judged
    /// by `retention_progress`.
    pub retention_ends_judged: u64,
    /// `consumer.offset` words on the platter `frontier_progress` held to the acks.
    pub frontier_words_judged: u64,
    /// Drains that left records buffered, held to the frame caps by `layout` (F4).
    pub partial_drains_judged: u64,
    /// WAL segments deleted behind the checkpoint.
    pub wal_segments_deleted: u64,
    pub clock_steps: u64,
    pub bit_flips: u64,
    pub latent_sectors: u64,
    /// Segment writes that landed with a bit flipped (the log's verify must refuse each
    /// one still there at its sync; the write-back's read-back repairs its own).
    pub corrupt_writes: u64,
    pub restarts_after_fatal_error: u64,
    /// Acks and nacks dropped before they returned (each had no effect).
    pub settles_dropped: u64,
    /// Background loop starts dropped part-way and restarted.
    pub loops_dropped: u64,
}

impl Paths {
    /// `(name, count)` for every path, in a stable order.
    pub fn entries(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("crashes", self.crashes),
            ("process_crashes", self.process_crashes),
            ("crashes_after_commit", self.crashes_after_commit),
            ("torn_tails_truncated_r1", self.torn_tails_truncated),
            ("zero_tails_at_open", self.zero_tails_at_open),
            ("holes_truncated_r2", self.holes_truncated),
            ("records_salvaged_r2", self.records_salvaged),
            ("salvage_copies_r2", self.salvage_copies),
            ("salvage_revivals_r2", self.salvage_revivals),
            ("wal_entries_saved_by_copy", self.wal_entries_saved_by_copy),
            ("refusals_r3", self.refusals),
            ("topics_refused", self.topics_refused),
            ("recorded_clamps_r4", self.recorded_clamps),
            ("hidden_tail_records", self.hidden_records),
            (
                "hidden_tails_exposed_as_duplicates",
                self.duplicates_exposed,
            ),
            ("records_skipped", self.records_skipped),
            ("partitions_poisoned", self.partitions_poisoned),
            ("segments_reaped", self.segments_reaped),
            ("leases_expired", self.leases_expired),
            ("redeliveries", self.redeliveries),
            ("delay_gates_held", self.delay_gates_held),
            ("parked_receives_woken", self.parked_receives_woken),
            ("wakeups_timed", self.wakeups_timed),
            ("delayed_records_delivered", self.delayed_delivered),
            (
                "frontiers_recovered_after_persist",
                self.frontiers_recovered,
            ),
            ("frontiers_loaded_on_touch", self.frontiers_loaded_on_touch),
            ("segment_rolls_judged", self.rolls_judged),
            ("wal_entries_replayed", self.wal_replayed),
            ("wal_segments_deleted", self.wal_segments_deleted),
            ("wal_ends_judged", self.wal_ends_judged),
            ("retention_ends_judged", self.retention_ends_judged),
            ("frontier_words_judged", self.frontier_words_judged),
            ("partial_drains_judged", self.partial_drains_judged),
            ("clock_steps", self.clock_steps),
            ("bit_flips", self.bit_flips),
            ("latent_sectors", self.latent_sectors),
            ("corrupt_writes", self.corrupt_writes),
            ("settles_dropped", self.settles_dropped),
            ("loops_dropped", self.loops_dropped),
            (
                "restarts_after_fatal_error",
                self.restarts_after_fatal_error,
            ),
        ]
    }
}
