//! A run with a wall-clock limit: a seed whose engine deadlocks (a lock taken twice on
//! the simulator's one thread) or whose simulation loops without letting simulated
//! time pass never returns, and a sweep that waits for it never ends and names no
//! seed. The run goes on its own thread; past the limit the caller reports the seed as
//! hung and leaves the thread behind (it ends with the process).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::Duration;

/// The default limit of one seed's wall time: a `long` seed takes 0.1-0.5 s in a
/// release build, so this is far past any profile's longest seed, and still lets a
/// sweep whose every seed hangs end within CI's limit.
pub const SEED_TIMEOUT_SECS: f64 = 60.0;

/// A limit in seconds: finite and positive.
pub fn parse_secs(s: &str) -> Result<f64, String> {
    let secs: f64 = s.parse().map_err(|e| format!("{s:?}: {e}"))?;
    if secs.is_finite() && secs > 0.0 && Duration::try_from_secs_f64(secs).is_ok() {
        Ok(secs)
    } else {
        Err(format!("{s:?}: need a positive, finite number of seconds"))
    }
}

/// How a run with a limit ended.
pub enum Finished<T> {
    Ran(T),
    /// A panic escaped the run.
    Panicked(Box<dyn Any + Send>),
    /// Still running at the limit; its thread is left behind.
    Hung,
}

/// Runs `work` on a fresh thread (nothing of one run's thread state leaks into the
/// next) and waits at most `limit` for it.
pub fn run_within<T: Send + 'static>(
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Finished<T> {
    let (tx, rx) = sync_channel(1);
    let thread = std::thread::spawn(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(work)));
    });
    match rx.recv_timeout(limit) {
        Ok(result) => {
            let _ = thread.join();
            match result {
                Ok(value) => Finished::Ran(value),
                Err(panic) => Finished::Panicked(panic),
            }
        }
        Err(RecvTimeoutError::Timeout) => Finished::Hung,
        // The thread ends only by sending; `catch_unwind` caught any panic.
        Err(RecvTimeoutError::Disconnected) => {
            Finished::Panicked(Box::new("the run's thread ended without a result"))
        }
    }
}

/// The message for a seed that hung.
pub fn hung_message(limit: Duration) -> String {
    format!(
        "HANG: the run did not finish within {:.0} s of wall time: a deadlock in the \
         engine or the simulator, or a loop that lets no simulated time pass; replay the \
         seed with a long --timeout and attach a debugger (gdb -p PID -batch -ex 'thread \
         apply all bt')",
        limit.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_a_positive_finite_number_of_seconds() {
        assert_eq!(parse_secs("0.5"), Ok(0.5));
        for bad in ["0", "-1", "inf", "NaN", "1e300", "soon"] {
            assert!(parse_secs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_run_past_its_limit_is_hung_and_one_within_it_returns() {
        // Generous where the run returns (a panic's backtrace takes its time), short
        // where it never would.
        let ample = Duration::from_secs(60);
        assert!(matches!(run_within(ample, || 7), Finished::Ran(7)));
        assert!(matches!(
            run_within(ample, || -> u8 { panic!("boom") }),
            Finished::Panicked(_)
        ));
        let (release, wait) = std::sync::mpsc::channel::<()>();
        // Blocks until the test releases it, after the limit.
        let hung = run_within(Duration::from_millis(50), move || wait.recv().is_ok());
        assert!(matches!(hung, Finished::Hung));
        drop(release);
    }
}
