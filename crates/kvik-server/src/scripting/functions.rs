//! FUNCTION libraries: the shared registry of loaded libraries, loading a library's
//! code (header, registrations, errors), and each thread's compiled copy of them.
//!
//! A library's source is the only thing shared between threads. FUNCTION LOAD runs the
//! code once on the loading thread to validate it and learn its functions; the
//! registry then holds the source and the function list, and bumps an epoch. Every
//! thread, before its next FCALL, notices the newer epoch and runs all libraries'
//! code again in its own Lua state to get callable functions.

use super::sandbox::Inputs;
use super::state::{lua_error_text, with_load_deadline, with_state, ThreadState};
use super::{ScriptFlags, Scripting};
use crate::errors::{CmdError, CmdResult};
use mlua::{Function, RegistryKey, Table, Value};
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One function as registered.
#[derive(Debug, Clone)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<String>,
    pub flags: ScriptFlags,
}

/// One library: its code and what it registered.
#[derive(Debug)]
pub struct Library {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: Vec<FunctionInfo>,
}

/// All libraries, by name.
#[derive(Default)]
pub struct Libraries {
    libs: RwLock<BTreeMap<String, Arc<Library>>>,
    epoch: AtomicU64,
}

/// What a restore or load does with a library of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collision {
    Fail,
    Replace,
}

impl Libraries {
    pub fn all(&self) -> Vec<Arc<Library>> {
        self.libs.read().values().cloned().collect()
    }

    /// The flags function `name` was registered with, if there is one. Function names
    /// are found regardless of case, as in Redis.
    pub fn function_flags(&self, name: &[u8]) -> Option<ScriptFlags> {
        let libs = self.libs.read();
        let mut functions = libs.values().flat_map(|l| &l.functions);
        functions
            .find(|f| f.name.as_bytes().eq_ignore_ascii_case(name))
            .map(|f| f.flags)
    }

    pub fn counts(&self) -> (usize, usize) {
        let libs = self.libs.read();
        (libs.len(), libs.values().map(|l| l.functions.len()).sum())
    }

    /// Bytes the libraries' code and registrations take, for INFO memory (an
    /// estimate: the texts plus a fixed cost per library and per function).
    pub fn memory(&self) -> usize {
        const PER_LIBRARY: usize = 64;
        const PER_FUNCTION: usize = 96;
        let libs = self.libs.read();
        let function = |f: &FunctionInfo| {
            PER_FUNCTION + f.name.len() + f.description.as_ref().map_or(0, String::len)
        };
        let library = |l: &Library| {
            PER_LIBRARY
                + l.name.len()
                + l.code.len()
                + l.functions.iter().map(function).sum::<usize>()
        };
        libs.values().map(|l| library(l)).sum()
    }

    fn changed(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    pub fn flush(&self) {
        self.libs.write().clear();
        self.changed();
    }

    pub fn delete(&self, name: &str) -> bool {
        let removed = self.libs.write().remove(name).is_some();
        if removed {
            self.changed();
        }
        removed
    }

    /// Adds libraries at once (LOAD adds one, RESTORE several): all or none.
    pub fn install(&self, new: Vec<Library>, collision: Collision) -> CmdResult {
        let mut libs = self.libs.write();
        for lib in &new {
            if collision == Collision::Fail && libs.contains_key(&lib.name) {
                return Err(format!("ERR Library {} already exists", lib.name).into());
            }
        }
        // Redis keeps all functions in one dictionary whose names ignore case, so a
        // function clashes with another library's whatever their cases; within one
        // library, names are only told apart exactly (the later one is called).
        let replaced: Vec<&str> = new.iter().map(|l| l.name.as_str()).collect();
        let mut taken: HashSet<String> = HashSet::new();
        for lib in libs
            .values()
            .filter(|l| !replaced.contains(&l.name.as_str()))
        {
            taken.extend(lib.functions.iter().map(|f| f.name.to_ascii_lowercase()));
        }
        for lib in &new {
            if let Some(f) = lib
                .functions
                .iter()
                .find(|f| taken.contains(&f.name.to_ascii_lowercase()))
            {
                return Err(format!("ERR Function {} already exists", f.name).into());
            }
            taken.extend(lib.functions.iter().map(|f| f.name.to_ascii_lowercase()));
        }
        for lib in new {
            libs.insert(lib.name.clone(), Arc::new(lib));
        }
        drop(libs);
        self.changed();
        Ok(())
    }
}

/// A thread's callable functions, by their names in lowercase.
#[derive(Default)]
pub struct Loaded {
    epoch: Option<u64>,
    functions: HashMap<String, (RegistryKey, ScriptFlags)>,
}

impl Loaded {
    /// A function of this thread's copy, by name in any case (Redis's function names
    /// ignore case).
    pub(super) fn get(&self, name: &str) -> Option<&(RegistryKey, ScriptFlags)> {
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            self.functions.get(&name.to_ascii_lowercase())
        } else {
            self.functions.get(name)
        }
    }
}

/// The library name in a `#!lua name=<lib>` first line, and the code.
pub fn parse_header(code: &[u8]) -> Result<String, CmdError> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(eol) = code.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    let line = String::from_utf8_lossy(&code[2..eol]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found").into());
    }
    let mut name = None;
    for part in parts {
        match part.strip_prefix("name=") {
            Some(_) if name.is_some() => {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                )
            }
            Some(n) => name = Some(n.to_string()),
            None => return Err(format!("ERR Invalid metadata value given: {part}").into()),
        }
    }
    let name = name.ok_or("ERR Library name was not given")?;
    if !valid_name(&name) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    Ok(name)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A library's functions as registered by running its code in `state`.
struct Registered {
    info: Vec<FunctionInfo>,
    /// In the registry, as compiled scripts are (see [`super::sandbox::Sandbox::call`]).
    callbacks: Vec<RegistryKey>,
}

/// Runs a library's code in `state` with the load-time `redis` table, collecting what
/// it registers.
fn run_library(state: &ThreadState, code: &[u8]) -> Result<Registered, CmdError> {
    let sandbox = &state.sandbox;
    let lua = &sandbox.lua;
    let internal = |e: mlua::Error| CmdError::from(format!("ERR {}", lua_error_text(&e)));
    // The header line becomes a comment so line numbers stay right.
    let source = [b"--", code].concat();
    let chunk = lua
        .load(&source[..])
        .set_name("@user_function")
        .set_mode(mlua::chunk::ChunkMode::Text)
        .set_environment(sandbox.library_env.clone())
        .into_function()
        .and_then(|f| lua.create_registry_value(f))
        .map_err(|e| {
            CmdError::from(format!(
                "ERR Error compiling function: {}",
                lua_error_text(&e)
            ))
        })?;
    let registered = lua.create_table().map_err(internal)?;
    sandbox
        .bridge
        .raw_set("registered", registered.clone())
        .map_err(internal)?;
    sandbox.bridge.raw_set("loading", true).map_err(internal)?;
    // Its top-level code may not run for long, wherever it runs: a library that loops
    // there would otherwise hold the thread for good.
    let outcome = with_load_deadline(|| sandbox.call(&chunk, Inputs::Nothing));
    let _ = sandbox.bridge.raw_set("loading", false);
    let _ = sandbox.bridge.raw_set("registered", Value::Nil);
    match outcome.map_err(internal)? {
        Ok(_) => {}
        Err(Value::Table(t)) => {
            let text: String = t.raw_get("err").unwrap_or_default();
            return Err(format!("ERR Error registering functions: {text}").into());
        }
        Err(_) => return Err("ERR Error registering functions".into()),
    }
    let mut out = Registered {
        info: Vec::new(),
        callbacks: Vec::new(),
    };
    for entry in registered.sequence_values::<Table>() {
        let entry = entry.map_err(internal)?;
        let mut flags = ScriptFlags {
            shebang: true,
            ..ScriptFlags::default()
        };
        let names: Vec<String> = entry
            .raw_get::<Table>("flags")
            .and_then(|t| t.sequence_values().collect())
            .map_err(internal)?;
        for name in names {
            flags.set(&name);
        }
        out.info.push(FunctionInfo {
            name: entry.raw_get("name").map_err(internal)?,
            description: entry.raw_get("description").map_err(internal)?,
            flags,
        });
        let callback: Function = entry.raw_get("callback").map_err(internal)?;
        let callback = lua.create_registry_value(callback).map_err(internal)?;
        out.callbacks.push(callback);
    }
    if out.info.is_empty() {
        return Err("ERR No functions registered".into());
    }
    Ok(out)
}

/// Checks a library's code by running it, returning the library to install.
pub fn compile_library(engine: &Scripting, code: &[u8]) -> Result<Library, CmdError> {
    let name = parse_header(code)?;
    let registered = with_state(engine, |state| run_library(state, code))??;
    Ok(Library {
        name,
        code: code.to_vec(),
        functions: registered.info,
    })
}

/// Makes `state`'s functions match the registry.
pub(super) fn refresh(engine: &Scripting, state: &mut ThreadState) -> CmdResult {
    let epoch = engine.libraries.epoch.load(Ordering::Acquire);
    if state.functions.epoch == Some(epoch) {
        return Ok(());
    }
    let mut functions = HashMap::new();
    for lib in engine.libraries.all() {
        let registered = run_library(state, &lib.code)?;
        for (info, f) in registered.info.into_iter().zip(registered.callbacks) {
            functions.insert(info.name.to_ascii_lowercase(), (f, info.flags));
        }
    }
    state.functions = Loaded {
        epoch: Some(epoch),
        functions,
    };
    Ok(())
}
