//! `forEach`: a body once per item, one after another or `parallelism` at a time, with
//! results, step records and loop records in item order.

use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use muster_core::resource::execution::StepStatus;
use serde_json::{Map, Value, json};

use super::outcome::{Entry, Fragment, Halt};
use super::run::Runner;
use super::scope::Scope;
use crate::plan::{PlannedStep, StepKind};

/// What one iteration produced.
struct Iteration {
    index: usize,
    item: Value,
    fragment: Fragment,
    /// Results of the body's direct sub-steps, by plain id.
    direct: Map<String, Value>,
}

impl Runner {
    pub(crate) async fn run_for_each(
        &self,
        step: &PlannedStep,
        scope: &Scope,
        suffix: &str,
    ) -> Fragment {
        let StepKind::ForEach {
            items,
            items_source,
            var,
            parallelism,
            body,
        } = &step.kind
        else {
            return Fragment::default();
        };
        let items = match self.within_budget(|| items.render_value_in(&scope.roots())) {
            Ok(Value::Array(items)) => items,
            Ok(other) => {
                let kind = match other {
                    Value::Null => "nil".to_owned(),
                    Value::String(_) => "string, expected a list".to_owned(),
                    Value::Bool(_) => "bool, expected a list".to_owned(),
                    Value::Number(_) => "number, expected a list".to_owned(),
                    _ => "map, expected a list".to_owned(),
                };
                return Fragment::halted(Halt::Engine(format!(
                    "forEach step {}: failed to resolve items expression: items expression \"{items_source}\" resolved to {kind}",
                    step.id
                )));
            }
            Err(e) => {
                return Fragment::halted(Halt::Engine(self.explain_budget(format!(
                    "forEach step {}: failed to resolve items expression: {e}",
                    step.id
                ))));
            }
        };
        // Each iteration starts from a copy of the scope: freeze it once so the copies share
        // the results recorded so far instead of duplicating them.
        let mut frozen = scope.clone();
        frozen.freeze();
        let scope = &frozen;
        let stop = AtomicBool::new(false);
        let iterations: Vec<Iteration> = if *parallelism <= 1 {
            // One after another: each iteration sees the results of the ones before it.
            let mut carried = scope.clone();
            let mut done = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                let it = self
                    .run_iteration(step, body, var, &carried, suffix, index, item)
                    .await;
                carried.merge(&it.fragment.results);
                let halted = it.fragment.halt.is_some();
                done.push(it);
                if halted {
                    break;
                }
            }
            done
        } else {
            let stop = &stop;
            futures_util::stream::iter(items.into_iter().enumerate())
                .map(|(index, item)| async move {
                    if stop.load(Ordering::Acquire) {
                        return None;
                    }
                    let it = self
                        .run_iteration(step, body, var, scope, suffix, index, item)
                        .await;
                    if it.fragment.halt.is_some() {
                        stop.store(true, Ordering::Release);
                    }
                    Some(it)
                })
                .buffered(*parallelism)
                .filter_map(std::future::ready)
                .collect()
                .await
        };
        self.finish_loop(step, scope, suffix, iterations).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_iteration(
        &self,
        step: &PlannedStep,
        body: &[PlannedStep],
        var: &str,
        base: &Scope,
        suffix: &str,
        index: usize,
        item: Value,
    ) -> Iteration {
        let mut scope = base.clone();
        scope.bind(var.to_owned(), item.clone());
        scope.bind(format!("{var}_index"), json!(index));
        let iteration_suffix = format!("{suffix}_{index}");
        let fragment = self.run_sequence(body, &mut scope, &iteration_suffix).await;
        let mut direct = Map::new();
        for sub in body {
            if let Some((_, v)) = fragment.results.iter().rev().find(|(k, _)| *k == sub.id) {
                direct.insert(sub.id.clone(), v.clone());
            }
        }
        let _ = step;
        Iteration {
            index,
            item,
            fragment,
            direct,
        }
    }

    async fn finish_loop(
        &self,
        step: &PlannedStep,
        scope: &Scope,
        suffix: &str,
        iterations: Vec<Iteration>,
    ) -> Fragment {
        let mut out = Fragment::default();
        let mut records = Vec::with_capacity(iterations.len());
        let mut last: Map<String, Value> = Map::new();
        for it in iterations {
            let Iteration {
                index,
                item,
                fragment,
                direct,
            } = it;
            let mut record = Map::new();
            record.insert("index".into(), json!(index));
            record.insert("item".into(), item);
            let status = StepStatus::finished(fragment.failed);
            record.insert("status".into(), json!(status.as_str()));
            record.insert("results".into(), Value::Object(direct.clone()));
            if let Some(halt) = &fragment.halt {
                record.insert("error".into(), json!(halt.message()));
            } else if fragment.failed
                && let Some(e) = fragment
                    .entries
                    .iter()
                    .find(|e| e.status == StepStatus::Failed)
            {
                record.insert(
                    "error".into(),
                    json!(
                        e.error
                            .clone()
                            .unwrap_or_else(|| format!("step {} failed", e.id))
                    ),
                );
            }
            records.push(Value::Object(record));
            // Keys of nested loops (`<id>_<outer>_<inner>`) pass through; direct sub-step
            // results are also kept per iteration as `<id>_<index>` (`<id>_<outer>_<index>`
            // for a nested loop).
            for (k, v) in &fragment.results {
                if !direct.contains_key(k) {
                    out.results.push((k.clone(), v.clone()));
                }
                last.insert(k.clone(), v.clone());
            }
            for (k, v) in direct {
                out.results.push((format!("{k}{suffix}_{index}"), v));
            }
            out.entries.extend(fragment.entries);
            out.failed |= fragment.failed;
            if out.halt.is_none() {
                out.halt = fragment.halt;
            }
        }
        // After the loop the plain ids keep the last iteration that ran them.
        out.results.extend(last);
        let records = Value::Array(records);
        let value = match &step.jq {
            Some(q) => match self.run_jq(q, records, scope).await {
                Ok(v) => v,
                Err(error) => {
                    out.failed = true;
                    out.halt = Some(Halt::Step {
                        id: step.id.clone(),
                        error,
                    });
                    return out;
                }
            },
            None => records,
        };
        if step.output {
            out.entries.push(Entry {
                id: step.id.clone(),
                tool: String::new(),
                status: StepStatus::finished(out.failed),
                condition: None,
                allow_failure: step.allow_failure,
                result: Some(value.clone()),
                output: true,
                error: None,
            });
        }
        out.results.push((step.id.clone(), value));
        if matches!(out.halt, Some(Halt::Step { .. })) && step.allow_failure {
            out.halt = None;
        }
        out
    }
}
