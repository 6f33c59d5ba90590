//! The write pipeline with admission, as the real server orders it:
//! decode → mutating webhooks → create/update rules (defaults, validation) → validating
//! webhooks → storage. Webhooks are called outside the store's lock; the write then commits
//! only if the object is still the one the webhooks saw, else the request is retried from
//! a fresh read (as `GuaranteedUpdate` does), so stale bodies still answer 409.
//!
//! Without any webhook configuration, requests take the plain synchronous path, unless the
//! resource converts between its served and stored forms (see [`crate::conversion`]).

use crate::admission::{Attributes, Operation};
use crate::cluster::{Cluster, DeleteOptions, PatchType, Sub, WriteOptions, present, to_storage};
use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::store::Write;
use crate::util::{meta_mut, meta_str};
use serde_json::{Value, json};

/// How often a write is retried when the object changed while webhooks were called.
const RETRIES: usize = 16;

fn sub_name(sub: Sub) -> &'static str {
    match sub {
        Sub::Main => "",
        Sub::Status => "status",
        Sub::Scale => "scale",
    }
}

fn options(kind: &str, opts: &WriteOptions) -> Value {
    let mut o = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        o["dryRun"] = json!(["All"]);
    }
    if let Some(fm) = &opts.field_manager {
        o["fieldManager"] = json!(fm);
    }
    o
}

fn rv(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}

impl Cluster {
    /// Creates an object through admission.
    pub async fn create_admitted(
        &self,
        def: &ResourceDef,
        ns: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let converts = self.converts(def);
        if !self.has_webhooks() && !converts {
            return self.create(def, ns, body, opts);
        }
        self.check_namespace(def, ns)?;
        let (obj, mut warnings) = self.admit_new(def, ns, body, opts).await?;
        let obj = self.to_stored(def, obj).await?;
        let out = self.served(def, self.commit_create(def, obj, opts)?).await?;
        warnings.dedup();
        Ok((out, warnings))
    }

    /// Mutates, builds and validates a new object; answers it in storage form.
    async fn admit_new(
        &self,
        def: &ResourceDef,
        ns: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let view = self.creation_view(def, ns, body)?;
        let mut a = Attributes {
            def,
            sub: "",
            op: Operation::Create,
            namespace: ns,
            name: meta_str(&view, "name").unwrap_or_default().to_string(),
            dry_run: opts.dry_run,
            options: options("CreateOptions", opts),
        };
        let (mutated, mut warnings) = self.mutate(&a, Some(view), None).await?;
        let mutated = mutated.unwrap_or(Value::Null);
        let (built, w) = self.build_new(def, ns, mutated, opts)?;
        warnings.extend(w);
        a.name = meta_str(&built, "name").unwrap_or_default().to_string();
        warnings.extend(self.validate_admission(&a, Some(&present(def, &built)), None).await?);
        Ok((built, warnings))
    }

    /// Replaces an object (or a subresource) through admission.
    pub async fn update_admitted(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Sub,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, bool, Vec<String>), ApiError> {
        if !self.has_webhooks() && !self.converts(def) {
            return self.update(def, ns, name, sub, body, opts);
        }
        self.write_admitted(def, ns, name, sub, opts, false, |_| Ok(body.clone())).await
    }

    /// Patches an object (or a subresource) through admission.
    #[allow(clippy::too_many_arguments)]
    pub async fn patch_admitted(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Sub,
        ptype: PatchType,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<(Value, bool, Vec<String>), ApiError> {
        if !self.has_webhooks() && !self.converts(def) {
            return self.patch(def, ns, name, sub, ptype, body, opts);
        }
        let patch = self.check_patch(def, sub, ptype, body, opts)?;
        let apply = ptype == PatchType::Apply;
        self.write_admitted(def, ns, name, sub, opts, apply, |current| match current {
            Some(cur) => crate::cluster::apply_with(def, cur, &patch, ptype, opts),
            None => Ok(patch.clone()),
        })
        .await
    }

    /// The shared update loop: `make` builds the request's object (in the view webhooks see:
    /// the object, or its Scale) from the current one, or, with `None`, the object to create.
    #[allow(clippy::too_many_arguments)]
    async fn write_admitted<F>(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Sub,
        opts: &WriteOptions,
        create_missing: bool,
        make: F,
    ) -> Result<(Value, bool, Vec<String>), ApiError>
    where
        F: Fn(Option<&Value>) -> Result<Value, ApiError>,
    {
        let key = Self::obj_key(def, ns, name);
        for _ in 0..RETRIES {
            let Some(stored) = self.store.get(&def.key(), &key) else {
                if !(create_missing || def.create_on_update && sub == Sub::Main) {
                    return Err(ApiError::not_found(&def.group, &def.plural, name));
                }
                self.check_namespace(def, ns)?;
                let mut body = make(None)?;
                if let Some(m) = meta_mut(&mut body) {
                    m.insert("name".into(), json!(name));
                    m.remove("resourceVersion");
                }
                let (mut obj, warnings) = self.admit_new(def, ns, body.clone(), opts).await?;
                if create_missing {
                    let manager = opts.field_manager.as_deref().unwrap_or_default();
                    crate::managed::created_by_apply(def, &mut obj, &body, manager);
                }
                let obj = self.to_stored(def, obj).await?;
                match self.commit_create(def, obj, opts) {
                    Ok(out) => return Ok((self.served(def, out).await?, true, warnings)),
                    Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                    Err(e) => return Err(e),
                }
            };
            // The stored object in the request's version (a webhook conversion, or the same
            // JSON), labelled with the storage apiVersion as the update rules expect.
            let mut old = self.served(def, (*stored).clone()).await?;
            to_storage(def, &mut old);
            let old_view =
                if sub == Sub::Scale { self.scale_of(def, &old)? } else { present(def, &old) };
            let view = make(Some(&old_view))?;
            let a = Attributes {
                def,
                sub: sub_name(sub),
                op: Operation::Update,
                namespace: ns,
                name: name.to_string(),
                dry_run: opts.dry_run,
                options: options("UpdateOptions", opts),
            };
            let (mutated, mut warnings) = self.mutate(&a, Some(view), Some(&old_view)).await?;
            let mutated = mutated.unwrap_or(Value::Null);
            let new =
                if sub == Sub::Scale { self.apply_scale(def, &old, &mutated)? } else { mutated };
            let decision = self.update_rules(def, &old, new.clone(), sub, opts, &mut warnings)?;
            let decision = self.own(def, &old, decision, sub, opts, create_missing);
            let result = match &decision {
                Write::Put(r) => r.clone(),
                Write::Keep => old.clone(),
                _ => new,
            };
            let result_view = if sub == Sub::Scale {
                self.scale_of(def, &result)?
            } else {
                present(def, &result)
            };
            warnings
                .extend(self.validate_admission(&a, Some(&result_view), Some(&old_view)).await?);
            let decision = match decision {
                Write::Put(r) => Write::Put(self.to_stored(def, r).await?),
                d => d,
            };
            let mut raced = false;
            let written = self.store.write(&def.key(), &key, opts.dry_run, |cur| match cur {
                Some(c) if rv(c) == rv(&stored) => Ok(decision),
                _ => {
                    raced = true;
                    Err(ApiError::stale(&def.group, &def.plural, name))
                }
            });
            let written = match written {
                Err(_) if raced => continue,
                w => w?,
            };
            self.after_write(def, &written.event, &written.object);
            let out = self.served(def, (*written.object).clone()).await?;
            let out = if sub == Sub::Scale { self.scale_of(def, &out)? } else { out };
            return Ok((out, false, warnings));
        }
        Err(ApiError::stale(&def.group, &def.plural, name))
    }

    /// Deletes an object through admission (`DELETE` with the old object).
    pub async fn delete_admitted(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        if self.has_webhooks() {
            let old = self.get_served(def, ns, name).await?;
            let mut o = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
            if let Some(p) = &opts.propagation {
                o["propagationPolicy"] = json!(p);
            }
            if opts.dry_run {
                o["dryRun"] = json!(["All"]);
            }
            let a = Attributes {
                def,
                sub: "",
                op: Operation::Delete,
                namespace: ns,
                name: name.to_string(),
                dry_run: opts.dry_run,
                options: o,
            };
            self.mutate(&a, None, Some(&old)).await?;
            self.validate_admission(&a, None, Some(&old)).await?;
        }
        let out = self.delete(def, ns, name, opts)?;
        self.served(def, out).await
    }
}
