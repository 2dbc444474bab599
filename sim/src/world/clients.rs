//! The clients outside the node: producers, consumers and the sampler, which record
//! what was acknowledged, delivered and observed; they survive the node's crashes.

use super::*;

/// Samples the engine: HWMs, log starts, counters, poison.
pub(super) fn sample(world: &World) {
    let Some(store) = world.store() else {
        return;
    };
    let mut rec = world.recorder.lock();
    let now = rec.now_ms();
    for ((topic, partition), status, metrics) in store.partition_statuses() {
        let tp = TopicPartition::new(topic, partition);
        // The node's watchdog reports the poisons it sees before it asks for a restart;
        // one that strikes while the restart waits is reported here, the same way.
        if let Some(hwm) = status.hwm_at_poison {
            node::report_poison(&mut rec, now, &tp, hwm);
        }
        rec.history
            .hwm_observed(now, &tp, status.hwm, Some(status.persisted_hwm), None);
        // The word on the platter, which `hwm_persisted` judges rather than the
        // engine's own account of it.
        let dir = layout::partition_dir(Path::new(DATA_ROOT), &tp.topic, tp.partition);
        let word = world
            .fs
            .durable_bytes(&dir.join(layout::HWM_FILE))
            .and_then(|bytes| word::decode(&bytes));
        rec.history.hwm_word_observed(now, &tp, word);
        let frontier_word = world
            .fs
            .durable_bytes(&dir.join(layout::CONSUMER_OFFSET_FILE))
            .and_then(|bytes| word::decode(&bytes));
        rec.history.frontier_word_observed(now, &tp, frontier_word);
        rec.history.log_start_observed(now, &tp, status.log_start);
        rec.history.engine_counters(
            now,
            &tp,
            metrics.recorded_loss_records,
            metrics.records_skipped,
        );
    }
}

pub(super) async fn sampler(world: Arc<World>) {
    loop {
        madsim::time::sleep(Duration::from_millis(100)).await;
        sample(&world);
    }
}

/// How long a client waits for a reply before giving the request up as unknown.
pub(super) const REPLY_TIMEOUT: Duration = Duration::from_millis(3_000);

// A parked receive answers before its client gives up on it.
const _: () = assert!((workload::PARK_MS_MAX as u128) < REPLY_TIMEOUT.as_millis());

pub(super) async fn call<T>(
    world: &World,
    make: impl FnOnce(async_channel::Sender<Result<T, String>>) -> Request,
) -> Result<T, String> {
    let (tx, rx) = async_channel::bounded(1);
    if world.requests.send(make(tx)).await.is_err() {
        return Err("request channel closed".into());
    }
    match madsim::time::timeout(REPLY_TIMEOUT, rx.recv()).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err("node crashed before replying".into()),
        Err(_) => Err("no reply in time".into()),
    }
}

pub(super) async fn producer(world: Arc<World>, index: usize, plan: workload::ProducerPlan) {
    let profile = &world.spec.profile;
    let mut dice = Dice::new(sub_seed(world.spec.seed, 100 + index as u64));
    let topic = world.spec.workload.topics[plan.topic].name.clone();
    let mut burst = 0u32;
    loop {
        if burst == 0 {
            madsim::time::sleep(Duration::from_millis(
                dice.range(plan.gap_ms.0..=plan.gap_ms.1).max(1),
            ))
            .await;
            if dice.chance(plan.burst_probability) {
                burst = dice.range(1..=u64::from(plan.burst_len_max)) as u32;
            }
        } else {
            burst -= 1;
        }
        if now_ms(&world) >= profile.produce_ms {
            break;
        }
        let id = world.next_id.fetch_add(1, Ordering::SeqCst);
        if id >= profile.records_max {
            break;
        }
        let key = format!("key-{}", dice.below(u64::from(plan.keys))).into_bytes();
        let len = dice.range(plan.payload_bytes.0 as u64..=plan.payload_bytes.1 as u64) as usize;
        let body = Workload::body(&mut dice, plan.compressible, id, len);
        if profile
            .only_ids
            .as_ref()
            .is_some_and(|ids| ids.binary_search(&id).is_err())
        {
            continue;
        }
        let payload = encode_payload(id, &body);
        {
            let mut rec = world.recorder.lock();
            let now = rec.now_ms();
            rec.history
                .produce_attempt(now, id, &topic, None, &key, &payload);
        }
        let result = call(&world, |reply| Request::Produce {
            id,
            topic: topic.clone(),
            key,
            payload,
            reply,
        })
        .await;
        match result {
            // The node recorded the ack when it sent it.
            Ok(_) => world.acked.notify_all(),
            Err(e) => {
                let mut rec = world.recorder.lock();
                let now = rec.now_ms();
                rec.history.produce_failed(now, id, &e);
            }
        }
    }
    world.producers_running.fetch_sub(1, Ordering::SeqCst);
}

/// The least share of deliveries a consumer drops after the heal.
pub(super) const HEALED_DROP_PROBABILITY: f64 = 0.03;

pub(super) async fn consumer(world: Arc<World>, index: usize, plan: workload::ConsumerPlan) {
    let mut dice = Dice::new(sub_seed(world.spec.seed, 10_000 + index as u64));
    let topic = world.spec.workload.topics[plan.topic].name.clone();

    loop {
        let result = call(&world, |reply| Request::Receive {
            topic: topic.clone(),
            partition: plan.partition,
            max: plan.batch_max,
            park: Duration::from_millis(plan.park_ms),
            reply,
        })
        .await;
        let deliveries = match result {
            Ok(d) => d,
            Err(_) => {
                madsim::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        // After the heal every consumer drops a few deliveries: `redelivered_after_expiry`
        // then sees leases expire in nearly every run, not only where the plan drew drops.
        let drop_probability = if world.recorder.lock().healed {
            plan.drop_probability.max(HEALED_DROP_PROBABILITY)
        } else {
            plan.drop_probability
        };
        for d in deliveries {
            // The node recorded the delivery when it sent it.
            let ack = if dice.chance(drop_probability) {
                continue;
            } else {
                !dice.chance(plan.nack_probability)
            };
            let offset = d.offset;
            // The node records the ack or nack when the engine accepts it.
            let _ = call(&world, |reply| Request::Settle {
                topic: topic.clone(),
                partition: plan.partition,
                offset,
                ack,
                reply,
            })
            .await;
        }
        // After the heal the consumer drains without thinking: the run now measures
        // whether every acknowledged record comes back within the delivery bound, and
        // a think time chosen for the faulty phase must not decide that.
        let healed = world.recorder.lock().healed;
        if plan.think_ms.1 > 0 && !healed {
            madsim::time::sleep(Duration::from_millis(
                dice.range(plan.think_ms.0..=plan.think_ms.1).max(1),
            ))
            .await;
        }
    }
}
