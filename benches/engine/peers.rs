//! Peer write-ahead logs on the same records, one fsync per commit (`--features peers`).
//! Each peer stores a record as one value holding the record's key and payload, under
//! its offset; a commit is one batch.
//!
//! - raft-engine 0.4 (default features off): entries of one raft group, indexes
//!   contiguous from 1, `Engine::write(batch, sync = true)`. Its entries must be protobuf
//!   2 messages; `BytesValue` (a well-known type) carries the index in its first 8 bytes,
//!   since `MessageExt::index` sees only the entry. Default config: batches over 8 KiB
//!   are LZ4-compressed, log files are recycled.
//! - fjall 3: one `WriteBatch` per commit with `durability(Some(PersistMode::SyncAll))`.
//! - redb 4: one write transaction per commit (`Durability::Immediate`, the default).

use crate::workload::Record;
use std::path::Path;

/// One peer, ready to commit batches.
pub trait Peer {
    fn name(&self) -> &'static str;
    fn commit(&mut self, records: &[Record]);
}

fn value(r: &Record) -> Vec<u8> {
    let mut v = Vec::with_capacity(r.user_len());
    v.extend_from_slice(&r.key);
    v.extend_from_slice(&r.payload);
    v
}

pub struct RaftEngine {
    engine: std::sync::Arc<raft_engine::Engine>,
    /// The raft group this writer appends to (1 unless made by [`RaftEngine::writer`]).
    group: u64,
    next_index: u64,
    batch: raft_engine::LogBatch,
    entries: Vec<protobuf::well_known_types::BytesValue>,
}

struct IndexInValue;

impl raft_engine::MessageExt for IndexInValue {
    type Entry = protobuf::well_known_types::BytesValue;
    fn index(e: &Self::Entry) -> u64 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&e.value[..8]);
        u64::from_be_bytes(word)
    }
}

impl RaftEngine {
    pub fn open(dir: &Path) -> Self {
        let config = raft_engine::Config {
            dir: dir.to_string_lossy().into_owned(),
            ..Default::default()
        };
        RaftEngine {
            engine: std::sync::Arc::new(
                raft_engine::Engine::open(config).expect("open raft-engine"),
            ),
            group: 1,
            next_index: 1,
            batch: raft_engine::LogBatch::default(),
            entries: Vec::new(),
        }
    }

    /// Another writer on the same engine, appending to raft group `group`: concurrent
    /// writers share the engine's write group (one fsync for several batches), each
    /// compressing its own batch first.
    /// `n` writers on raft groups 1 to `n` of this engine, one for each thread.
    pub fn writers(&self, n: usize) -> Vec<std::sync::Mutex<Self>> {
        (1..=n as u64)
            .map(|group| std::sync::Mutex::new(self.writer(group)))
            .collect()
    }

    pub fn writer(&self, group: u64) -> Self {
        RaftEngine {
            engine: self.engine.clone(),
            group,
            next_index: 1,
            batch: raft_engine::LogBatch::default(),
            entries: Vec::new(),
        }
    }
}

impl Peer for RaftEngine {
    fn name(&self) -> &'static str {
        "raft-engine 0.4"
    }

    fn commit(&mut self, records: &[Record]) {
        self.entries.clear();
        for r in records {
            let mut e = protobuf::well_known_types::BytesValue::new();
            let mut v = Vec::with_capacity(8 + r.user_len());
            v.extend_from_slice(&self.next_index.to_be_bytes());
            v.extend_from_slice(&r.key);
            v.extend_from_slice(&r.payload);
            e.value = v;
            self.entries.push(e);
            self.next_index += 1;
        }
        self.batch
            .add_entries::<IndexInValue>(self.group, &self.entries)
            .expect("add entries");
        self.engine.write(&mut self.batch, true).expect("write");
        assert!(self.batch.is_empty(), "raft-engine drains the batch");
    }
}

pub struct Fjall {
    db: fjall::Database,
    keyspace: fjall::Keyspace,
    next: u64,
}

impl Fjall {
    pub fn open(dir: &Path) -> Self {
        let db = fjall::Database::builder(dir).open().expect("open fjall");
        let keyspace = db
            .keyspace("log", fjall::KeyspaceCreateOptions::default)
            .expect("keyspace");
        Fjall {
            db,
            keyspace,
            next: 0,
        }
    }
}

impl Peer for Fjall {
    fn name(&self) -> &'static str {
        "fjall 3"
    }

    fn commit(&mut self, records: &[Record]) {
        let mut batch = self
            .db
            .batch()
            .durability(Some(fjall::PersistMode::SyncAll));
        for r in records {
            batch.insert(&self.keyspace, self.next.to_be_bytes(), value(r));
            self.next += 1;
        }
        batch.commit().expect("commit");
    }
}

const TABLE: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("log");

pub struct Redb {
    db: redb::Database,
    next: u64,
}

impl Redb {
    pub fn open(dir: &Path) -> Self {
        let db = redb::Database::create(dir.join("log.redb")).expect("open redb");
        Redb { db, next: 0 }
    }
}

impl Peer for Redb {
    fn name(&self) -> &'static str {
        "redb 4"
    }

    fn commit(&mut self, records: &[Record]) {
        let txn = self.db.begin_write().expect("begin");
        {
            let mut table = txn.open_table(TABLE).expect("table");
            for r in records {
                table
                    .insert(self.next, value(r).as_slice())
                    .expect("insert");
                self.next += 1;
            }
        }
        txn.commit().expect("commit");
    }
}
