//! Supervisor operations on share links (decisions.md section 10): one per view, enabled by PUT
//! (keeping its token, so a re-enabled link is the same link), disabled by DELETE, looked up by
//! token for the public read-only page.

use rand::distributions::Alphanumeric;
use rand::Rng;

use super::model::{now_timestamp, Share};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorCode};

/// Characters of a share token (random alphanumerics: about 143 bits).
const TOKEN_LEN: usize = 24;

fn not_found(view_id: &str) -> ApiError {
    ApiError::new(ErrorCode::ShareIsNotFound, format!("View \"{view_id}\" has no share link."))
}

impl Supervisor {
    /// Enables the view's share link (creating it on first use); the caller checked the view.
    pub fn enable_share(
        &mut self,
        p: &Principal,
        view_id: &str,
        include_grid_history: Option<bool>,
    ) -> ApiResult<Share> {
        let now = now_timestamp();
        let share = match self.shares.get(view_id) {
            Some(existing) => Share {
                active: true,
                include_grid_history: include_grid_history.unwrap_or(existing.include_grid_history),
                last_modified_date: now,
                ..existing.clone()
            },
            None => Share {
                view_id: view_id.to_owned(),
                company_id: p.company_id().to_owned(),
                token: rand::thread_rng()
                    .sample_iter(&Alphanumeric)
                    .take(TOKEN_LEN)
                    .map(char::from)
                    .collect(),
                active: true,
                include_grid_history: include_grid_history.unwrap_or(false),
                created_date: now.clone(),
                last_modified_date: now,
            },
        };
        self.commit(&[CatalogChange::put(EntityKind::Share, view_id, &share)])?;
        self.shares.insert(view_id.to_owned(), share.clone());
        Ok(share)
    }

    /// The view's share link (404 shareIsNotFound before the first PUT).
    pub fn share(&self, view_id: &str) -> ApiResult<Share> {
        self.shares.get(view_id).cloned().ok_or_else(|| not_found(view_id))
    }

    /// Disables the view's share link: the page 404s until it is enabled again.
    pub fn disable_share(&mut self, view_id: &str) -> ApiResult<()> {
        let mut share = self.share(view_id)?;
        share.active = false;
        share.last_modified_date = now_timestamp();
        self.commit(&[CatalogChange::put(EntityKind::Share, view_id, &share)])?;
        self.shares.insert(view_id.to_owned(), share);
        Ok(())
    }

    /// The active share link with this token.
    pub fn share_by_token(&self, token: &str) -> Option<Share> {
        self.shares.values().find(|s| s.active && s.token == token).cloned()
    }
}
