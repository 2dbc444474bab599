//! The peers sections (feature `peers`): the same records through raft-engine and the
//! others, one writer and two.

use super::*;

impl Bench {
    #[cfg(feature = "peers")]
    pub(crate) fn peers(&mut self) {
        use peers::Peer;
        section("Peers: same records, one fsync per commit (records/s)");
        header(&["batch", "contender", "records/s", "engine / this"]);
        for (slot, batch) in [1usize, 1000].into_iter().enumerate() {
            let commits = self.scale.peer_commits[slot];
            let log = open_log(
                &self.dir(&format!("peers{batch}-log")),
                LogConfig::default(),
            );
            let mut contenders: Vec<Box<dyn Peer>> = vec![
                Box::new(peers::RaftEngine::open(
                    &self.dir(&format!("peers{batch}-raft")),
                )),
                Box::new(peers::Fjall::open(
                    &self.dir(&format!("peers{batch}-fjall")),
                )),
                Box::new(peers::Redb::open(&self.dir(&format!("peers{batch}-redb")))),
            ];
            let mut engine_time = Duration::ZERO;
            let mut peer_time = vec![Duration::ZERO; contenders.len()];
            let per_round = commits.div_ceil(self.scale.rounds);
            let mut c = 0;
            while c < commits {
                let end = (c + per_round).min(commits);
                let t = Instant::now();
                for k in c..end {
                    log.append_batch(pairs(self.slice(k * batch, batch)))
                        .expect("append");
                    pollster::block_on(log.sync()).expect("sync");
                }
                engine_time += t.elapsed();
                for (peer, time) in contenders.iter_mut().zip(&mut peer_time) {
                    let t = Instant::now();
                    for k in c..end {
                        peer.commit(self.slice(k * batch, batch));
                    }
                    *time += t.elapsed();
                }
                c = end;
            }
            let n = (commits * batch) as f64;
            let engine_rate = n / secs(engine_time);
            row(&[
                batch.to_string(),
                "engine".into(),
                format!("{engine_rate:.0}"),
                "1.00".into(),
            ]);
            for (peer, time) in contenders.iter().zip(&peer_time) {
                let rate = n / secs(*time);
                row(&[
                    batch.to_string(),
                    peer.name().into(),
                    format!("{rate:.0}"),
                    ratio(engine_rate, rate),
                ]);
            }
            pollster::block_on(log.close()).expect("close");
        }
        println!("  target: batch 1000 engine / raft-engine >= 1.50");
        self.peers_two_writers();
        self.peers_sixteen_writers();
    }

    /// Batch 1000 from two writers at once, on the engine (one Log, two producers) and
    /// on raft-engine (one Engine, two raft groups): both overlap one writer's
    /// compression with the other's fsync, so this is the like-for-like comparison of
    /// the concurrent case.
    #[cfg(feature = "peers")]
    pub(crate) fn peers_two_writers(&mut self) {
        use peers::Peer;
        section("Peers at batch 1000, two writers at once (records/s)");
        let batch = 1000;
        let per = self.scale.peer_commits[1];
        let log = open_log(&self.dir("peers2w-log"), LogConfig::default());
        let raft = peers::RaftEngine::open(&self.dir("peers2w-raft"));
        let writers = raft.writers(2);
        let rounds = self.interleaved(
            2,
            per,
            batch,
            &|w, k| {
                let chunk = self.slice((w * per + k) * batch, batch);
                log.append_batch(pairs(chunk)).expect("append");
                pollster::block_on(log.sync()).expect("sync");
            },
            &|w, k| {
                let chunk = self.slice((w * per + k) * batch, batch);
                writers[w]
                    .lock()
                    .expect("one thread per writer")
                    .commit(chunk);
            },
        );
        rounds.print("engine, 2 producers", "raft-engine 0.4, 2 writers");
        pollster::block_on(log.close()).expect("close");
        println!("  target: batch 1000 engine / raft-engine >= 1.50");
    }

    /// One record per commit from 16 writers at once, on the engine (one Log, 16
    /// producers, each `Log::commit`) and on raft-engine (one Engine, 16 raft groups):
    /// what a busy broker's many small producers get from group commit.
    #[cfg(feature = "peers")]
    pub(crate) fn peers_sixteen_writers(&mut self) {
        use peers::Peer;
        const WRITERS: usize = 16;
        section("Peers at 1 record per commit, 16 writers at once (records/s)");
        let per = (self.scale.producer_commits / WRITERS).max(1);
        let log = open_log(&self.dir("peers16w-log"), LogConfig::default());
        let raft = peers::RaftEngine::open(&self.dir("peers16w-raft"));
        let writers = raft.writers(WRITERS);
        let rounds = self.interleaved(
            WRITERS,
            per,
            1,
            &|w, k| {
                let record = self.slice(w * per + k, 1);
                pollster::block_on(log.commit(pairs(record))).expect("commit");
            },
            &|w, k| {
                let record = self.slice(w * per + k, 1);
                writers[w]
                    .lock()
                    .expect("one thread per writer")
                    .commit(record);
            },
        );
        rounds.print(
            &format!("engine, {WRITERS} producers"),
            &format!("raft-engine 0.4, {WRITERS} writers"),
        );
        pollster::block_on(log.close()).expect("close");
        println!("  target: engine / raft-engine >= 1.50");
    }

    /// `writers` threads at once, each making commits `0..per` of `batch` records with
    /// `engine(writer, k)` and then with `peer(writer, k)`, in interleaved rounds
    /// (engine first in even rounds, the peer in odd ones) so that a burst of noise on
    /// this shared machine hits both alike.
    #[cfg(feature = "peers")]
    fn interleaved(
        &self,
        writers: usize,
        per: usize,
        batch: usize,
        engine: &(dyn Fn(usize, usize) + Sync),
        peer: &(dyn Fn(usize, usize) + Sync),
    ) -> Rounds {
        let per_round = per.div_ceil(self.scale.rounds);
        let run = |commit: &(dyn Fn(usize, usize) + Sync), from: usize, to: usize| {
            let t = Instant::now();
            std::thread::scope(|s| {
                for w in 0..writers {
                    s.spawn(move || (from..to).for_each(|k| commit(w, k)));
                }
            });
            (writers * (to - from) * batch) as f64 / secs(t.elapsed())
        };
        let mut rounds = Rounds::default();
        for (round, from) in (0..per).step_by(per_round).enumerate() {
            let to = (from + per_round).min(per);
            let (engine_rate, peer_rate) = if round % 2 == 0 {
                let e = run(engine, from, to);
                (e, run(peer, from, to))
            } else {
                let p = run(peer, from, to);
                (run(engine, from, to), p)
            };
            rounds.engine.push(engine_rate);
            rounds.peer.push(peer_rate);
            rounds.ratios.push(engine_rate / peer_rate);
        }
        rounds
    }
}

/// Each round's records/s of the engine and a peer, and their ratio.
#[cfg(feature = "peers")]
#[derive(Default)]
struct Rounds {
    engine: Vec<f64>,
    peer: Vec<f64>,
    ratios: Vec<f64>,
}

#[cfg(feature = "peers")]
impl Rounds {
    /// The two rows (each one's median round) and the median of the rounds' ratios.
    fn print(mut self, engine: &str, peer: &str) {
        header(&["contender", "records/s", "engine / this"]);
        row(&[
            engine.into(),
            format!("{:.0}", median(&mut self.engine)),
            "1.00".into(),
        ]);
        row(&[
            peer.into(),
            format!("{:.0}", median(&mut self.peer)),
            format!("{:.2}", median(&mut self.ratios)),
        ]);
        println!(
            "  engine / peer: the median of {} interleaved rounds' ratios (range {:.2}-{:.2})",
            self.ratios.len(),
            self.ratios.first().copied().unwrap_or_default(),
            self.ratios.last().copied().unwrap_or_default(),
        );
    }
}
