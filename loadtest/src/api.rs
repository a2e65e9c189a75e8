//! The gridd calls loadtest makes besides the load itself: readiness, seeding a grid, attaching
//! to an existing view, deleting the seeded grid and reading `/metrics`.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::data;
use crate::scenario::{encode, Workload};
use crate::{LoadError, Options};

/// Records per seeding call (the API's bulk limit).
pub const SEED_BATCH: usize = 1000;
/// Seeding adds go out on this many connections at once (one at a time took 131 s for 1M
/// records against a server that takes several).
pub const SEED_CONNECTIONS: usize = 4;

/// A gridd base URL and key over one connection pool.
#[derive(Debug, Clone)]
pub struct Api {
    pub client: reqwest::Client,
    pub base: String,
    key: String,
}

/// The grid under load and how it came to be.
#[derive(Debug)]
pub struct Target {
    pub workload: Workload,
    /// The grid loadtest created, if it did.
    pub seeded_grid: Option<String>,
    pub columns: usize,
    pub seed_seconds: f64,
}

impl Api {
    pub fn new(base: &str, key: &str, timeout: Duration) -> Result<Api, LoadError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(usize::MAX)
            .build()
            .map_err(|source| LoadError::Http { context: "HTTP client".into(), source })?;
        Ok(Api { client, base: base.trim_end_matches('/').to_owned(), key: key.to_owned() })
    }

    /// A request to `path` (starting with `/`) with the key.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .header("Authorization", format!("ApiKey {}", self.key))
    }

    /// Sends and returns the JSON body and headers of a 2xx answer.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(Value, reqwest::header::HeaderMap), LoadError> {
        let (text, headers) = self.call_text(method, path, body).await?;
        let value = if text.is_empty() { Value::Null } else { serde_json::from_str(&text)? };
        Ok((value, headers))
    }

    /// Sends and returns the body text and headers of a 2xx answer.
    async fn call_text(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(String, reqwest::header::HeaderMap), LoadError> {
        let context = format!("{method} {path}");
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .map_err(|source| LoadError::Http { context: context.clone(), source })?;
        let status = response.status();
        let headers = response.headers().clone();
        let text = response
            .text()
            .await
            .map_err(|source| LoadError::Http { context: context.clone(), source })?;
        if !status.is_success() {
            return Err(LoadError::Status { context, status: status.as_u16(), body: text });
        }
        Ok((text, headers))
    }

    /// Waits until `GET /healthz` answers 200.
    pub async fn wait_ready(&self, within: Duration) -> Result<(), LoadError> {
        let deadline = Instant::now() + within;
        loop {
            let answer = self.client.get(format!("{}/healthz", self.base)).send().await;
            match answer {
                Ok(response) if response.status() == StatusCode::OK => return Ok(()),
                Ok(_) | Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(response) => {
                    return Err(LoadError::Server(format!(
                        "{}/healthz answered {}",
                        self.base,
                        response.status()
                    )))
                }
                Err(source) => {
                    return Err(LoadError::Http {
                        context: format!("{}/healthz", self.base),
                        source,
                    })
                }
            }
        }
    }

    /// The text of `GET /metrics`.
    pub async fn metrics(&self) -> Result<String, LoadError> {
        self.call_text(Method::GET, "/metrics", None).await.map(|(text, _)| text)
    }

    /// Creates a grid of `options.columns` columns (targets depending on the source) and
    /// `options.records` records, added [`SEED_BATCH`] per call.
    pub async fn seed(&self, options: &Options) -> Result<Target, LoadError> {
        let started = Instant::now();
        let db = match &options.db {
            Some(db) => db.clone(),
            None => {
                let (dbs, _) = self.call(Method::GET, "/v1/databases", None).await?;
                dbs.get(0)
                    .and_then(|d| d["id"].as_str())
                    .ok_or_else(|| LoadError::Server("the key sees no database; pass --db".into()))?
                    .to_owned()
            }
        };
        let name = format!("loadtest {} records", options.records);
        let (grid, _) = self
            .call(
                Method::POST,
                &format!("/v1/grids?dbId={}", encode(&db)),
                Some(&json!({"name": name})),
            )
            .await?;
        let field = |name: &str| {
            grid[name]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| LoadError::Server(format!("the created grid has no {name}: {grid}")))
        };
        let (grid_id, view) = (field("id")?, field("defaultAccessViewId")?);
        let columns = data::columns(usize::from(options.columns));
        let views = format!("/v1/views/{}", encode(&view));
        for column in &columns {
            self.call(Method::POST, &format!("{views}/columns"), Some(column)).await?;
        }
        let ids: Vec<String> =
            columns.iter().filter_map(|c| c["id"].as_str().map(str::to_owned)).collect();
        for column in columns.iter().filter(|c| c["localizationType"] == "targetLanguage") {
            let dependency = json!({"sourceColumnId": ids[0], "targetColumnId": column["id"]});
            self.call(Method::POST, &format!("{views}/dependencies"), Some(&dependency)).await?;
        }
        // Batches are built in order (the data depends only on the seed) and sent
        // `SEED_CONNECTIONS` at a time.
        let mut rng = StdRng::seed_from_u64(options.seed);
        let mut record_ids = Vec::with_capacity(options.records);
        let mut sending = tokio::task::JoinSet::new();
        let path = format!("{views}/records");
        for start in (0..options.records).step_by(SEED_BATCH) {
            let end = (start + SEED_BATCH).min(options.records);
            let batch: Vec<Value> = (start..end)
                .map(|n| {
                    let record = data::record(&mut rng, n, "");
                    let extra = data::extra_values(&mut rng, ids.len().saturating_sub(12));
                    let cells: Vec<Value> = ids
                        .iter()
                        .zip(record.values.iter().chain(extra.iter()))
                        .map(|(id, cell)| json!({"columnId": id, "value": cell.to_json()}))
                        .collect();
                    record_ids.push(record.id.clone());
                    json!({"id": record.id, "path": record.path, "cells": cells})
                })
                .collect();
            if sending.len() >= SEED_CONNECTIONS {
                Self::seeded(sending.join_next().await)?;
            }
            let (api, path) = (self.clone(), path.clone());
            sending.spawn(async move {
                api.call(Method::POST, &path, Some(&Value::Array(batch))).await.map(|_| ())
            });
        }
        while let Some(sent) = sending.join_next().await {
            Self::seeded(Some(sent))?;
        }
        let target = ids
            .iter()
            .skip(1)
            .find(|id| {
                columns.iter().any(|c| c["id"] == **id && c["localizationType"] == "targetLanguage")
            })
            .cloned();
        Ok(Target {
            workload: Workload {
                view,
                source: ids[0].clone(),
                target,
                has_count: ids.iter().any(|c| c == "count"),
                queries: Workload::read_queries(&ids),
                ids: record_ids,
                page_size: usize::from(options.page_size),
                bulk_size: usize::from(options.bulk_size),
            },
            seeded_grid: Some(grid_id),
            columns: ids.len(),
            seed_seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The outcome of one seeding add.
    fn seeded(
        joined: Option<Result<Result<(), LoadError>, tokio::task::JoinError>>,
    ) -> Result<(), LoadError> {
        match joined {
            Some(Ok(result)) => result,
            Some(Err(err)) => Err(LoadError::Server(format!("a seeding add stopped: {err}"))),
            None => Ok(()),
        }
    }

    /// Loads an existing view: its columns and every record id.
    pub async fn attach(&self, view: &str, options: &Options) -> Result<Target, LoadError> {
        let started = Instant::now();
        let views = format!("/v1/views/{}", encode(view));
        let (body, _) = self.call(Method::GET, &views, None).await?;
        let columns = body["columns"].as_array().cloned().unwrap_or_default();
        let is_text = |c: &&Value| {
            matches!(c["type"].as_str(), Some("language" | "singleLine" | "multipleLines"))
        };
        let source = columns
            .iter()
            .find(|c| c["localizationType"] == "sourceLanguage")
            .or_else(|| columns.iter().find(is_text))
            .and_then(|c| c["id"].as_str())
            .ok_or_else(|| LoadError::Server(format!("view {view} has no text column to edit")))?
            .to_owned();
        let target = columns
            .iter()
            .find(|c| c["localizationType"] == "targetLanguage")
            .and_then(|c| c["id"].as_str())
            .map(str::to_owned);
        let ids: Vec<String> =
            columns.iter().filter_map(|c| c["id"].as_str().map(str::to_owned)).collect();
        let mut record_ids = Vec::new();
        loop {
            let page = json!({"offset": record_ids.len(), "limit": 1000}).to_string();
            let path =
                format!("{views}/records?page={}&columnIds={}", encode(&page), encode(&source));
            let (records, headers) = self.call(Method::GET, &path, None).await?;
            let records = records.as_array().cloned().unwrap_or_default();
            record_ids.extend(records.iter().filter_map(|r| r["id"].as_str().map(str::to_owned)));
            let total: usize = headers
                .get("x-total-count")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if records.is_empty() || record_ids.len() >= total {
                break;
            }
        }
        if record_ids.is_empty() {
            return Err(LoadError::Server(format!("view {view} has no records to load")));
        }
        Ok(Target {
            workload: Workload {
                view: view.to_owned(),
                source,
                target,
                has_count: ids.iter().any(|c| c == "count"),
                queries: Workload::read_queries(&ids),
                ids: record_ids,
                page_size: usize::from(options.page_size),
                bulk_size: usize::from(options.bulk_size),
            },
            seeded_grid: None,
            columns: ids.len(),
            seed_seconds: started.elapsed().as_secs_f64(),
        })
    }

    pub async fn delete_grid(&self, grid: &str) -> Result<(), LoadError> {
        self.call(Method::DELETE, &format!("/v1/grids/{}", encode(grid)), None).await.map(|_| ())
    }
}

/// Sums the samples of a metric (every label set) in Prometheus text.
pub fn metric_sum(text: &str, name: &str) -> Option<f64> {
    let mut found = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(name) else { continue };
        if !(rest.starts_with(' ') || rest.starts_with('{')) {
            continue;
        }
        let value = rest.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
        if let Some(value) = value {
            found = Some(found.unwrap_or(0.0) + value);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_sum_adds_label_sets_and_skips_longer_names() {
        let text = "# TYPE x histogram\nx_count 3\nx_count_other 9\nx_sum{a=\"1\"} 0.5\nx_sum{a=\"2\"} 0.25\n";
        assert_eq!(metric_sum(text, "x_count"), Some(3.0));
        assert_eq!(metric_sum(text, "x_sum"), Some(0.75));
        assert_eq!(metric_sum(text, "y"), None);
    }
}
