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
        let (bare_records, bare_time) = bare::decompress_frames(&bytes);
        let bare_rate = bare_records as f64 / secs(bare_time);

        let t = Instant::now();
        let log = open_log(busy_dir, LogConfig::default());
        let open_time = t.elapsed();
        let hwm = log.hwm();
        assert_eq!(hwm, bare_records, "every committed record is visible");
        let t = Instant::now();
        let (cold_records, cold_bytes) = read_range(&log, 0, hwm);
        let cold = t.elapsed();
        assert_eq!(cold_records, hwm);

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
            format!("{bare_rate:.0}"),
            "".into(),
            "1.00".into(),
        ]);
        let cold_rate = cold_records as f64 / secs(cold);
        row(&[
            "engine cold (fresh open, page cache warm)".into(),
            format!("{cold_rate:.0}"),
            format!("{:.0}", cold_bytes as f64 / secs(cold) / 1e6),
            ratio(cold_rate, bare_rate),
        ]);
        let cached_rate = cached_records as f64 / secs(cached);
        row(&[
            format!("engine cached ({cached_frames} frames in the frame cache)"),
            format!("{cached_rate:.0}"),
            "".into(),
            ratio(cached_rate, bare_rate),
        ]);
        println!(
            "  Log::open of {hwm} records in {} frames: {}",
            hwm / 1000,
            ms(open_time)
        );
        pollster::block_on(log.close()).expect("close");
    }
}
