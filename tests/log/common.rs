//! Helpers shared by the log tests.

use cafelog_engine::clock::ManualClock;
use cafelog_engine::fs::StdFs;
use cafelog_engine::log::{Log, LogConfig, OpenReport};
use std::path::Path;

#[path = "../shared/frames.rs"]
mod frames;
#[path = "../shared/watchdog.rs"]
mod watchdog;

pub type TestLog = Log<StdFs, ManualClock>;

pub const WALL_START_MS: u64 = 1_700_000_000_000;

/// Payload bytes that, with the key `b"k"`, make an envelope of [`ENVELOPE`] bytes
/// (`shape.rs` checks it against the engine's `envelope::encoded_len`).
pub const PAYLOAD: usize = 89;
/// The envelope: version (1), key length (1), key (1), commit time (8), payload.
pub const ENVELOPE: u64 = 100;
/// A raw frame of one such record: header, length prefix, envelope.
pub const ONE_RECORD_FRAME: u64 =
    cafelog_engine::format::frame::FRAME_HEADER_LEN as u64 + 4 + ENVELOPE;

pub fn open(dir: &Path, clock: &ManualClock, config: LogConfig) -> (TestLog, OpenReport) {
    watchdog::start();
    every_alarm_stays_interesting();
    pollster::block_on(Log::open(StdFs, clock.clone(), dir, config)).expect("open log")
}

pub fn open_default(dir: &Path) -> (TestLog, ManualClock) {
    let clock = ManualClock::new(WALL_START_MS);
    let (log, _) = open(dir, &clock, LogConfig::default());
    (log, clock)
}

/// A JSON-like record of about 170 bytes.
pub fn json_record(i: u64) -> Vec<u8> {
    format!(
        r#"{{"order_id":{i},"customer":"c-{}","sku":"SKU-{:05}","qty":{},"price_cents":{},"status":"created","region":"eu-west-1"}}"#,
        i % 97,
        i % 1000,
        i % 7 + 1,
        1000 + i % 5000
    )
    .into_bytes()
}

/// Every record from `from` below the HWM.
pub fn read_all<F: cafelog_engine::fs::Fs, C: cafelog_engine::clock::Clock>(
    log: &Log<F, C>,
    from: u64,
) -> Vec<cafelog_engine::log::Record> {
    let mut out = Vec::new();
    let mut next = from;
    loop {
        let batch = pollster::block_on(log.read(next, 1000)).expect("read");
        if batch.next_offset == next {
            return out;
        }
        next = batch.next_offset;
        out.extend(batch.records);
    }
}

/// Where the frames of segment `name` in `dir` end.
pub fn frames_end(dir: &Path, name: &str) -> u64 {
    frames::frames_end(&dir.join(name))
}

pub fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
}

/// A filesystem that fails chosen operations on demand, over the real one.
#[derive(Clone, Default)]
pub struct FailingFs {
    pub fail_sync: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub fail_write: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, `write_at` (or `read_at`) never completes: a caller can only drop it.
    pub hang_write: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub hang_read: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, `read_at` is pending (it looks again each time it is polled, and
    /// registers no waker: for futures a test polls by hand).
    pub pause_read: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, `sync_dir` never completes.
    pub hang_sync_dir: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, `remove_file` never completes (nor removes): a caller can only drop it.
    pub hang_remove: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, `remove_file` fails with EIO (and removes nothing).
    pub fail_remove: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, a `sync_dir` right after a `remove_file` (the fsync that makes the
    /// unlink durable) fails with EIO.
    pub fail_sync_dir_after_remove: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, `sync_data` takes effect (or fails, with `fail_sync`) and then never
    /// returns: its caller can only drop it, unaware of the outcome.
    pub hang_after_sync: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, `write_at` blocks its thread (and sets `write_blocked`) until cleared.
    pub block_write: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub write_blocked: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// While set, writes of zeros (preallocation) fail; other writes pass.
    pub fail_zero_writes: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// `Some((from, to))`: a read at position `from` of any file reads from `to`
    /// instead (a misdirected read).
    pub redirect_read: std::sync::Arc<std::sync::Mutex<Option<(u64, u64)>>>,
    /// `Some((file, range))`: a read of `file` touching a byte of `range` fails with
    /// EIO, as a latent sector error does until the sector is written again.
    pub unreadable: std::sync::Arc<std::sync::Mutex<Option<Unreadable>>>,
    /// While set, each `read_at` returns at most 7 bytes (a short read, which POSIX
    /// allows).
    pub short_reads: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// `read_at` calls that failed with EIO (a bad sector hit).
    pub eio_reads: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// While above 0, a write of frame bytes (not all zeros) to a segment file stores
    /// its last byte with the low bit flipped (a write that lands corrupt), and counts
    /// this down.
    pub corrupt_segment_writes: std::sync::Arc<std::sync::atomic::AtomicU32>,
    /// Every write attempted, in order.
    pub writes: std::sync::Arc<std::sync::Mutex<Vec<WriteOp>>>,
    /// Every directory operation, in order: `remove NAME`, `sync_dir`.
    pub dir_ops: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Every `set_len`, in order: (file name, length).
    pub set_lens: std::sync::Arc<std::sync::Mutex<Vec<(String, u64)>>>,
}

/// A file name and the byte range of it a read must not touch.
pub type Unreadable = (String, std::ops::Range<u64>);

/// One attempted `write_at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOp {
    pub file: String,
    pub position: u64,
    pub len: u64,
    /// Every byte was zero (a preallocation).
    pub zeros: bool,
}

/// Opens a log in `dir` on a [`FailingFs`] (no faults set yet), returning both.
pub fn open_failing(dir: &Path, config: LogConfig) -> (Log<FailingFs, ManualClock>, FailingFs) {
    let fs = FailingFs::default();
    let log = pollster::block_on(open_on(fs.clone(), dir, config)).expect("open log");
    (log, fs)
}

/// Opens the log in `dir` on `fs` (a [`FailingFs`] armed beforehand).
pub async fn open_on(
    fs: FailingFs,
    dir: &Path,
    config: LogConfig,
) -> Result<Log<FailingFs, ManualClock>, cafelog_engine::log::LogError> {
    watchdog::start();
    every_alarm_stays_interesting();
    let clock = ManualClock::new(WALL_START_MS);
    Log::open(fs, clock, dir, config).await.map(|(log, _)| log)
}

/// Polls `future` once, then drops it (as a timeout would); whether it finished.
pub fn poll_once<F: std::future::Future>(future: F) -> bool {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    future.as_mut().poll(&mut cx).is_ready()
}

/// Pending while `flag` is set, checked at every poll (no waker is registered).
async fn pause_while(flag: &std::sync::atomic::AtomicBool) {
    std::future::poll_fn(|_| {
        if flag.load(std::sync::atomic::Ordering::SeqCst) {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await
}

/// Pending forever while `flag` is set when first polled.
async fn hang_while(flag: &std::sync::atomic::AtomicBool) {
    if flag.load(std::sync::atomic::Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
}

pub struct FailingFile {
    inner: <StdFs as cafelog_engine::fs::Fs>::File,
    fs: FailingFs,
    name: String,
}

fn injected(flag: &std::sync::atomic::AtomicBool) -> std::io::Result<()> {
    if flag.load(std::sync::atomic::Ordering::SeqCst) {
        Err(std::io::Error::other("injected EIO"))
    } else {
        Ok(())
    }
}

impl cafelog_engine::fs::File for FailingFile {
    async fn read_at(&self, buf: &mut [u8], position: u64) -> std::io::Result<usize> {
        hang_while(&self.fs.hang_read).await;
        pause_while(&self.fs.pause_read).await;
        let redirect = *self.fs.redirect_read.lock().expect("lock");
        let position = match redirect {
            Some((from, to)) if from == position => to,
            _ => position,
        };
        if let Some((file, range)) = &*self.fs.unreadable.lock().expect("lock")
            && *file == self.name
            && range.start < position + buf.len() as u64
            && position < range.end
        {
            self.fs
                .eio_reads
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Err(std::io::Error::from_raw_os_error(5));
        }
        let buf = if self
            .fs
            .short_reads
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            let len = buf.len().min(7);
            &mut buf[..len]
        } else {
            buf
        };
        self.inner.read_at(buf, position).await
    }
    async fn write_at(&self, data: &[u8], position: u64) -> std::io::Result<()> {
        let zeros = data.iter().all(|b| *b == 0);
        self.fs.writes.lock().expect("lock").push(WriteOp {
            file: self.name.clone(),
            position,
            len: data.len() as u64,
            zeros,
        });
        injected(&self.fs.fail_write)?;
        if zeros {
            injected(&self.fs.fail_zero_writes)?;
        }
        hang_while(&self.fs.hang_write).await;
        while self
            .fs
            .block_write
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            self.fs
                .write_blocked
                .store(true, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let corrupt = !zeros
            && self.name.ends_with(".log")
            && self
                .fs
                .corrupt_segment_writes
                .fetch_update(
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                    |n| n.checked_sub(1),
                )
                .is_ok();
        if corrupt && let Some((last, rest)) = data.split_last() {
            let mut stored = rest.to_vec();
            stored.push(last ^ 1);
            return self.inner.write_at(&stored, position).await;
        }
        self.inner.write_at(data, position).await
    }
    async fn len(&self) -> std::io::Result<u64> {
        self.inner.len().await
    }
    async fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.fs
            .set_lens
            .lock()
            .expect("lock")
            .push((self.name.clone(), len));
        self.inner.set_len(len).await
    }
    async fn sync_data(&self) -> std::io::Result<()> {
        let result = match injected(&self.fs.fail_sync) {
            Ok(()) => self.inner.sync_data().await,
            Err(e) => Err(e),
        };
        hang_while(&self.fs.hang_after_sync).await;
        result
    }
}

impl cafelog_engine::fs::Fs for FailingFs {
    type File = FailingFile;
    async fn open(
        &self,
        path: &Path,
        mode: cafelog_engine::fs::OpenMode,
    ) -> std::io::Result<FailingFile> {
        Ok(FailingFile {
            inner: StdFs.open(path, mode).await?,
            fs: self.clone(),
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        })
    }
    async fn create_dir_all(&self, path: &Path) -> std::io::Result<()> {
        StdFs.create_dir_all(path).await
    }
    async fn list_dir(&self, path: &Path) -> std::io::Result<Vec<String>> {
        StdFs.list_dir(path).await
    }
    async fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        StdFs.rename(from, to).await
    }
    async fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        self.dir_ops
            .lock()
            .expect("lock")
            .push(format!("remove {}", name.unwrap_or_default()));
        hang_while(&self.hang_remove).await;
        injected(&self.fail_remove)?;
        StdFs.remove_file(path).await
    }
    async fn sync_dir(&self, path: &Path) -> std::io::Result<()> {
        let after_remove = {
            let mut ops = self.dir_ops.lock().expect("lock");
            let after = ops.last().is_some_and(|op| op.starts_with("remove "));
            ops.push("sync_dir".into());
            after
        };
        injected(&self.fail_sync)?;
        if after_remove {
            injected(&self.fail_sync_dir_after_remove)?;
        }
        hang_while(&self.hang_sync_dir).await;
        StdFs.sync_dir(path).await
    }
    async fn exists(&self, path: &Path) -> std::io::Result<bool> {
        StdFs.exists(path).await
    }
}

/// An engine alarm as a `tracing` event carries it: its name and numeric fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaisedAlarm {
    pub name: String,
    pub numbers: std::collections::BTreeMap<String, u64>,
}

/// Runs `f` on this thread and returns what it did, and every alarm the engine raised
/// meanwhile, in order.
pub fn with_alarms<T>(f: impl FnOnce() -> T) -> (T, Vec<RaisedAlarm>) {
    every_alarm_stays_interesting();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let out = tracing::subscriber::with_default(AlarmCapture(seen.clone()), f);
    let alarms = seen.lock().unwrap().clone();
    (out, alarms)
}

struct AlarmCapture(std::sync::Arc<std::sync::Mutex<Vec<RaisedAlarm>>>);

/// Installs, once, a global subscriber that records nothing and calls every callsite
/// "sometimes" interesting. Without it, an alarm first raised on a test thread with no
/// subscriber while another thread enters `with_alarms` can be cached as never
/// interesting, and that capture misses it (the retention tests failed a third of
/// their runs so).
fn every_alarm_stays_interesting() {
    struct Quiet;
    impl tracing::Subscriber for Quiet {
        fn register_callsite(
            &self,
            _: &'static tracing::Metadata<'static>,
        ) -> tracing::subscriber::Interest {
            tracing::subscriber::Interest::sometimes()
        }
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            false
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Another global subscriber already installed serves as well.
        let _ = tracing::subscriber::set_global_default(Quiet);
    });
}

#[derive(Default)]
struct Fields {
    name: Option<String>,
    numbers: std::collections::BTreeMap<String, u64>,
}

impl tracing::field::Visit for Fields {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.numbers.insert(field.name().to_owned(), value);
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "alarm" {
            self.name = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

impl tracing::Subscriber for AlarmCapture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some(name) = fields.name {
            self.0.lock().unwrap().push(RaisedAlarm {
                name,
                numbers: fields.numbers,
            });
        }
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}
