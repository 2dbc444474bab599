//! The write-path sections: commit latency against a bare fdatasync, throughput by
//! batch size, pipelined batches, and many producers sharing fsyncs.

use super::*;

impl Bench {
    pub(crate) fn commit_latency(&mut self) {
        let n = self.scale.latency_commits;
        let log = open_log(&self.dir("latency-log"), LogConfig::default());
        let mut fresh = bare::FreshBlock::new(&self.dir("latency-fresh").join("f"));
        let mut overwrite =
            bare::OverwriteBlock::new(&self.dir("latency-overwrite").join("f"), n as u64);
        let (mut engine_t, mut fresh_t, mut overwrite_t) = (Vec::new(), Vec::new(), Vec::new());
        let per_round = n.div_ceil(self.scale.rounds);
        let mut i = 0;
        while i < n {
            let end = (i + per_round).min(n);
            for j in i..end {
                let record = self.slice(j, 1);
                let t = Instant::now();
                pollster::block_on(log.commit(pairs(record))).expect("commit");
                engine_t.push(t.elapsed());
            }
            for _ in i..end {
                fresh_t.push(fresh.once());
            }
            for _ in i..end {
                overwrite_t.push(overwrite.once());
            }
            i = end;
        }
        let (e50, e99) = (
            percentile(&mut engine_t, 50.0),
            percentile(&mut engine_t, 99.0),
        );
        let (f50, f99) = (
            percentile(&mut fresh_t, 50.0),
            percentile(&mut fresh_t, 99.0),
        );
        let (o50, o99) = (
            percentile(&mut overwrite_t, 50.0),
            percentile(&mut overwrite_t, 99.0),
        );
        section(&format!(
            "Durable commit latency: 1 record, Log::commit, {n} samples each"
        ));
        header(&["", "p50", "p99", "p50 / this", "p99 / this"]);
        row(&[
            "engine Log::commit".into(),
            us(e50),
            us(e99),
            "1.00".into(),
            "1.00".into(),
        ]);
        row(&[
            "bare 4 KiB write+fdatasync, fresh space".into(),
            us(f50),
            us(f99),
            ratio(secs(e50), secs(f50)),
            ratio(secs(e99), secs(f99)),
        ]);
        row(&[
            "bare 4 KiB write+fdatasync, allocated".into(),
            us(o50),
            us(o99),
            ratio(secs(e50), secs(o50)),
            ratio(secs(e99), secs(o99)),
        ]);
        println!("  target: engine p50 / allocated p50 <= 1.20");
        let m = log.metrics().snapshot();
        println!(
            "  engine fsyncs per commit {:.2}",
            m.fsyncs as f64 / m.commits.max(1) as f64
        );
        pollster::block_on(log.close()).expect("close");
    }

    /// Group commit at batch sizes 1..1000 against the two bare pipelines; also the
    /// compression figures, from the same logs. Returns the directory of the batch-1000
    /// log (closed), which the read measurement reopens.
    pub(crate) fn throughput(&mut self) -> PathBuf {
        section("Group-commit throughput: append_batch + sync, one producer");
        header(&[
            "batch",
            "engine rec/s",
            "engine MB/s",
            "(a) raw rec/s",
            "(b) zstd rec/s",
            "engine / (a)",
            "engine / (b)",
        ]);
        let mut compression = Vec::new();
        let mut busy_dir = PathBuf::new();
        for (slot, &batch) in BATCH_SIZES.iter().enumerate() {
            let commits = self.scale.throughput_commits[slot];
            let log_dir = self.dir(&format!("batch{batch}-log"));
            let log = open_log(&log_dir, LogConfig::default());
            let mut raw = bare::RawPipeline::new(&self.dir(&format!("batch{batch}-raw")).join("f"));
            let mut zstd =
                bare::ZstdPipeline::new(&self.dir(&format!("batch{batch}-zstd")).join("f"), 3);
            let (mut te, mut ta, mut tb) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
            let per_round = commits.div_ceil(self.scale.rounds);
            let wall_ms = 1_700_000_000_000;
            let mut c = 0;
            while c < commits {
                let end = (c + per_round).min(commits);
                let t = Instant::now();
                for k in c..end {
                    let chunk = self.slice(k * batch, batch);
                    log.append_batch(pairs(chunk)).expect("append");
                    pollster::block_on(log.sync()).expect("sync");
                }
                te += t.elapsed();
                let t = Instant::now();
                for k in c..end {
                    raw.commit(self.slice(k * batch, batch), wall_ms);
                }
                ta += t.elapsed();
                let t = Instant::now();
                for k in c..end {
                    zstd.commit(self.slice(k * batch, batch), wall_ms);
                }
                tb += t.elapsed();
                c = end;
            }
            let n = (commits * batch) as f64;
            let user_bytes: usize = (0..commits)
                .map(|k| {
                    self.slice(k * batch, batch)
                        .iter()
                        .map(Record::user_len)
                        .sum::<usize>()
                })
                .sum();
            let (re, ra, rb) = (n / secs(te), n / secs(ta), n / secs(tb));
            row(&[
                batch.to_string(),
                format!("{re:.0}"),
                format!("{:.1}", user_bytes as f64 / secs(te) / 1e6),
                format!("{ra:.0}"),
                format!("{rb:.0}"),
                ratio(re, ra),
                ratio(re, rb),
            ]);
            let m = log.metrics().snapshot();
            let name = match batch {
                1 => Some(("trickle (1 rec/frame)", "~40%")),
                1000 => Some(("busy (1000 rec/frame)", "~95%")),
                _ => None,
            };
            if let Some((name, spec)) = name {
                compression.push((name, spec, m, raw.bytes_written(), zstd.bytes_written()));
            }
            if batch == 1 {
                // The same trickle with every frame compressed (`compress_min_bytes` 0),
                // for what storing lone records raw costs on disk. Not timed.
                let dir = self.dir("trickle-compressed-log");
                let every = open_log(
                    &dir,
                    LogConfig {
                        compress_min_bytes: 0,
                        ..LogConfig::default()
                    },
                );
                for k in 0..commits {
                    every.append_batch(pairs(self.slice(k, 1))).expect("append");
                    pollster::block_on(every.sync()).expect("sync");
                }
                compression.push((
                    "trickle, compress_min_bytes 0",
                    "~40%",
                    every.metrics().snapshot(),
                    raw.bytes_written(),
                    zstd.bytes_written(),
                ));
                pollster::block_on(every.close()).expect("close");
            }
            pollster::block_on(log.close()).expect("close");
            if batch == 1000 {
                busy_dir = log_dir;
            }
        }
        println!("  targets: batch 1000 engine / (a) >= 1.00; batch 1 rec/s >= raft-engine's");
        self.knobs();

        section("Compression saved (LogMetrics bytes_stored vs bytes_uncompressed)");
        header(&[
            "traffic",
            "frames",
            "saved, frames on disk",
            "saved, payload only",
            "spec",
            "(b) zstd pipeline saved",
        ]);
        for (name, spec, m, raw_bytes, zstd_bytes) in &compression {
            let on_disk = 1.0 - m.bytes_stored as f64 / m.bytes_uncompressed as f64;
            // Payload only: the stored payload against the length-prefixed records it
            // encodes (the frame header is fixed overhead the codec cannot remove).
            let stored_payload = m.bytes_stored - 27 * m.frames_written;
            let input_payload = m.bytes_uncompressed + 4 * m.records_written;
            let payload = 1.0 - stored_payload as f64 / input_payload as f64;
            let pipeline =
                1.0 - (*zstd_bytes as f64 - 27.0 * m.frames_written as f64) / *raw_bytes as f64;
            row(&[
                (*name).into(),
                m.frames_written.to_string(),
                pct(on_disk),
                pct(payload),
                (*spec).into(),
                pct(pipeline),
            ]);
        }
        println!(
            "  target: trickle payload never stored larger than its input (saved >= 0%); \
             lone records are stored raw below compress_min_bytes ({} B)",
            LogConfig::default().compress_min_bytes
        );
        busy_dir
    }

    /// Producers committing batches of 1000 at once: one compresses its batch while
    /// another's fsync is in flight (the write path's encoding stage has its own lock).
    /// Beside pipeline (a), one writer, on the same number of batches.
    pub(crate) fn pipelined_batches(&mut self) {
        section("Batch 1000 from concurrent producers: one Log, each thread append_batch + sync");
        header(&[
            "producers",
            "records/s",
            "fsyncs/batch",
            "vs 1 producer",
            "(a) raw rec/s",
            "engine / (a)",
        ]);
        let batch = 1000;
        let batches = self.scale.throughput_commits[3];
        let mut single = 0.0;
        for producers in [1usize, 2, 4] {
            let log = open_log(
                &self.dir(&format!("pipelined{producers}")),
                LogConfig::default(),
            );
            let per = batches / producers;
            let barrier = std::sync::Barrier::new(producers + 1);
            let started = std::thread::scope(|s| {
                for p in 0..producers {
                    let (log, barrier, bench) = (log.clone(), &barrier, &*self);
                    s.spawn(move || {
                        barrier.wait();
                        for j in 0..per {
                            let chunk = bench.slice((p * per + j) * batch, batch);
                            log.append_batch(pairs(chunk)).expect("append");
                            pollster::block_on(log.sync()).expect("sync");
                        }
                    });
                }
                barrier.wait();
                Instant::now()
            });
            let engine_secs = started.elapsed().as_secs_f64();
            let mut raw =
                bare::RawPipeline::new(&self.dir(&format!("pipelined{producers}-raw")).join("f"));
            let t = Instant::now();
            for k in 0..per * producers {
                raw.commit(self.slice(k * batch, batch), 1_700_000_000_000);
            }
            let raw_rate = (per * producers * batch) as f64 / secs(t.elapsed());
            let m = log.metrics().snapshot();
            let rate = (per * producers * batch) as f64 / engine_secs;
            if producers == 1 {
                single = rate;
            }
            row(&[
                producers.to_string(),
                format!("{rate:.0}"),
                format!("{:.2}", m.fsyncs as f64 / (per * producers) as f64),
                ratio(rate, single),
                format!("{raw_rate:.0}"),
                ratio(rate, raw_rate),
            ]);
            pollster::block_on(log.close()).expect("close");
        }
        println!(
            "  target: batch 1000 engine / (a) >= 1.00 (here with the next batch compressed during the fsync)"
        );
    }

    pub(crate) fn producers(&mut self) {
        section("Concurrent producers: one Log, each thread commits 1 record at a time");
        header(&[
            "producers",
            "commits/s",
            "fsyncs/commit",
            "records/fsync",
            "vs 1 producer",
            "fsync cycle",
            "cycle / bare",
        ]);
        let total = self.scale.producer_commits;
        // The bare cycle beside it: a 4 KiB write + fdatasync into allocated space, the
        // least an fsync cycle of the engine can cost on this disk.
        let samples = (total / 20).max(20);
        let mut bare_block =
            bare::OverwriteBlock::new(&self.dir("producers-bare").join("f"), samples as u64);
        let mut bare_t: Vec<Duration> = (0..samples).map(|_| bare_block.once()).collect();
        let bare_cycle = percentile(&mut bare_t, 50.0);
        let mut single = 0.0;
        for producers in [1usize, 4, 16] {
            let log = open_log(
                &self.dir(&format!("producers{producers}")),
                LogConfig::default(),
            );
            let per = total / producers;
            let barrier = std::sync::Barrier::new(producers + 1);
            let elapsed = std::thread::scope(|s| {
                for p in 0..producers {
                    let (log, barrier, records) = (log.clone(), &barrier, &self.records);
                    s.spawn(move || {
                        barrier.wait();
                        for j in 0..per {
                            let i = (p * per + j) % records.len();
                            pollster::block_on(log.commit(pairs(&records[i..i + 1])))
                                .expect("commit");
                        }
                    });
                }
                barrier.wait();
                // The scope joins every producer before it returns; `elapsed()` is read
                // after that.
                Instant::now()
            });
            let secs_taken = elapsed.elapsed().as_secs_f64();
            let m = log.metrics().snapshot();
            let commits = (per * producers) as f64;
            let rate = commits / secs_taken;
            if producers == 1 {
                single = rate;
            }
            // The mean time from one fsync of the log to the next, all its work included.
            let cycle = secs_taken / m.fsyncs.max(1) as f64;
            row(&[
                producers.to_string(),
                format!("{rate:.0}"),
                format!("{:.3}", m.fsyncs as f64 / commits),
                format!("{:.2}", m.records_written as f64 / m.fsyncs.max(1) as f64),
                ratio(rate, single),
                us(Duration::from_secs_f64(cycle)),
                ratio(cycle, secs(bare_cycle)),
            ]);
            pollster::block_on(log.close()).expect("close");
        }
        println!(
            "  bare 4 KiB write+fdatasync, allocated: p50 {} over {samples} samples",
            us(bare_cycle)
        );
        println!(
            "  targets: 16 producers >= 14 records/fsync with cycle / bare <= 1.30; \
             4 producers >= 3.5 records/fsync"
        );
    }
}
