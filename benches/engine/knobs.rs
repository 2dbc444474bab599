//! The knobs section: what each `LogConfig` knob costs or buys at one batch size.

use super::*;

impl Bench {
    /// The configured zstd level at batch 1000, where compression is the bottleneck:
    /// the default (3) against level 1, both beside pipeline (a).
    /// The knobs at batch 1000, where compression is the commit path's largest cost:
    /// the default (zstd level 1, preallocation on) against level 3 and against
    /// preallocation off, all beside pipeline (a).
    pub(crate) fn knobs(&mut self) {
        section("Knobs at batch 1000 (LogConfig), one producer");
        header(&["contender", "records/s", "saved on disk", "/ (a) raw"]);
        let batch = 1000;
        let commits = self.scale.throughput_commits[3];
        let defaults = LogConfig::default();
        let contenders: [(&str, LogConfig); 5] = [
            (
                "engine default (zstd level 1, hash log 11)",
                defaults.clone(),
            ),
            (
                "engine, zstd level -3 (fast)",
                LogConfig {
                    zstd_level: -3,
                    ..defaults.clone()
                },
            ),
            (
                "engine, zstd level 3",
                LogConfig {
                    zstd_level: 3,
                    ..defaults.clone()
                },
            ),
            (
                "engine, zstd's own hash log (14)",
                LogConfig {
                    zstd_hash_log: 0,
                    ..defaults.clone()
                },
            ),
            (
                "engine default, no preallocation",
                LogConfig {
                    preallocate_bytes: 0,
                    ..defaults
                },
            ),
        ];
        let logs: Vec<BenchLog> = contenders
            .iter()
            .enumerate()
            .map(|(i, (_, config))| open_log(&self.dir(&format!("knobs{i}-log")), config.clone()))
            .collect();
        let mut raw = bare::RawPipeline::new(&self.dir("knobs-raw").join("f"));
        let mut times = vec![Duration::ZERO; logs.len() + 1];
        let per_round = commits.div_ceil(self.scale.rounds);
        let mut c = 0;
        while c < commits {
            let end = (c + per_round).min(commits);
            for (log, time) in logs.iter().zip(&mut times) {
                let t = Instant::now();
                for k in c..end {
                    log.append_batch(pairs(self.slice(k * batch, batch)))
                        .expect("append");
                    pollster::block_on(log.sync()).expect("sync");
                }
                *time += t.elapsed();
            }
            let t = Instant::now();
            for k in c..end {
                raw.commit(self.slice(k * batch, batch), 1_700_000_000_000);
            }
            times[logs.len()] += t.elapsed();
            c = end;
        }
        let n = (commits * batch) as f64;
        let raw_rate = n / secs(times[logs.len()]);
        for ((log, (name, _)), time) in logs.iter().zip(&contenders).zip(&times) {
            let m = log.metrics().snapshot();
            let rate = n / secs(*time);
            row(&[
                (*name).into(),
                format!("{rate:.0}"),
                pct(1.0 - m.bytes_stored as f64 / m.bytes_uncompressed as f64),
                ratio(rate, raw_rate),
            ]);
            pollster::block_on(log.close()).expect("close");
        }
        row(&[
            "(a) raw pipeline".into(),
            format!("{raw_rate:.0}"),
            "-".into(),
            "1.00".into(),
        ]);
    }
}
