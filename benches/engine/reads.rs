//! The read section: cold and cached `Log::read` against a bare zstd decompress of the
//! same frames.

use super::*;

impl Bench {
    pub(crate) fn reads(&mut self, busy_dir: &Path) {
        section("Read throughput: Log::read(next, 1000), decode + CRC, batch-1000 frames");
        let segment = std::fs::read_dir(busy_dir)
            .expect("list")
            .map(|e| e.expect("entry").path())
            .find(|p| p.extension().is_some_and(|x| x == "log"))
            .expect("a segment");
        let bytes = std::fs::read(&segment).expect("read segment");
        // Interleaved rounds, each a bare decompress and a cold read from a fresh open:
        // one cold pass is a fraction of a second, short enough for a burst of noise on
        // this shared machine to halve it, so the table shows each one's median round and
        // the median of the rounds' ratios.
        let (mut bare_rates, mut cold_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let (mut open_time, mut cold_bytes_per_s) = (Duration::MAX, Vec::new());
        let mut log: Option<BenchLog> = None;
        for _ in 0..self.scale.rounds {
            let (bare_records, bare_time) = bare::decompress_frames(&bytes);
            let bare_rate = bare_records as f64 / secs(bare_time);
            if let Some(previous) = log.take() {
                pollster::block_on(previous.close()).expect("close");
            }
            let t = Instant::now();
            let fresh = open_log(busy_dir, LogConfig::default());
            open_time = open_time.min(t.elapsed());
            let hwm = fresh.hwm();
            assert_eq!(hwm, bare_records, "every committed record is visible");
            let t = Instant::now();
            let (cold_records, cold_bytes) = read_range(&fresh, 0, hwm);
            let cold = t.elapsed();
            assert_eq!(cold_records, hwm);
            let cold_rate = cold_records as f64 / secs(cold);
            bare_rates.push(bare_rate);
            cold_rates.push(cold_rate);
            ratios.push(cold_rate / bare_rate);
            cold_bytes_per_s.push(cold_bytes as f64 / secs(cold));
            log = Some(fresh);
        }
        let log = log.expect("at least one round");
        let hwm = log.hwm();
        // Cached: the last frames, fewer than the frame cache holds; the first pass warms.
        let cached_frames = (log.config().frame_cache_frames as u64 / 2).min(hwm / 1000);
        let from = hwm - cached_frames * 1000;
        read_range(&log, from, hwm);
        let t = Instant::now();
        let mut cached_records = 0;
        for _ in 0..self.scale.cached_passes {
            cached_records += read_range(&log, from, hwm).0;
        }
        let cached = t.elapsed();

        header(&["", "records/s", "MB/s (key+payload)", "/ bare decompress"]);
        row(&[
            "bare zstd decompress (no CRC, no split)".into(),
            format!("{:.0}", median(&mut bare_rates)),
            "".into(),
            "1.00".into(),
        ]);
        row(&[
            "engine cold (fresh open, page cache warm)".into(),
            format!("{:.0}", median(&mut cold_rates)),
            format!("{:.0}", median(&mut cold_bytes_per_s) / 1e6),
            format!("{:.2}", median(&mut ratios)),
        ]);
        let bare_rate = median(&mut bare_rates);
        let cached_rate = cached_records as f64 / secs(cached);
        row(&[
            format!("engine cached ({cached_frames} frames in the frame cache)"),
            format!("{cached_rate:.0}"),
            "".into(),
            ratio(cached_rate, bare_rate),
        ]);
        println!(
            "  Log::open of {hwm} records in {} frames: {} (the fastest round)",
            hwm / 1000,
            ms(open_time)
        );
        println!(
            "  cold / bare: the median of {} interleaved rounds' ratios (range {:.2}-{:.2})",
            ratios.len(),
            ratios.first().copied().unwrap_or_default(),
            ratios.last().copied().unwrap_or_default(),
        );
        pollster::block_on(log.close()).expect("close");
    }
}
