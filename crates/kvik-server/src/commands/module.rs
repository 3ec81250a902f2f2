//! MODULE: kvik loads no modules. LIST is empty, and LOAD, LOADEX and UNLOAD fail
//! with the errors Redis gives for a module that cannot be loaded or is not loaded,
//! so tools that probe for modules see a server without any. LOAD, LOADEX and
//! UNLOAD are `protected`: with `enable-module-command no` (the default) `call`
//! refuses them before they get here, as Redis does.

use super::shared::help_reply;
use super::table::{acl, flags, Command};
use super::{CmdResult, Ctx};

const ADMIN: u32 = flags::ADMIN | flags::NOSCRIPT;
const LOADING: u32 = ADMIN | flags::NO_ASYNC_LOADING | flags::PROTECTED;
const DANGEROUS: u32 = acl::ADMIN | acl::SLOW | acl::DANGEROUS;

const SUBCOMMANDS: &[Command] = &[
    Command::new("module|list", 2, list)
        .tips(&["nondeterministic_output_order"])
        .flags(ADMIN)
        .acl(DANGEROUS)
        .doc(
            "server",
            "4.0.0",
            "O(N) where N is the number of loaded modules.",
            "Lists the loaded modules.",
        ),
    Command::new("module|load", -3, load)
        .flags(LOADING)
        .acl(DANGEROUS)
        .doc("server", "4.0.0", "O(1)", "Loads a module."),
    Command::new("module|loadex", -3, load)
        .flags(LOADING)
        .acl(DANGEROUS)
        .doc(
            "server",
            "7.0.0",
            "O(1)",
            "Loads a module, with configuration parameters and arguments.",
        ),
    Command::new("module|unload", 3, unload)
        .flags(LOADING)
        .acl(DANGEROUS)
        .doc("server", "4.0.0", "O(1)", "Unloads a module."),
    Command::help(
        "module|help",
        help,
        "5.0.0",
        "Explains the MODULE subcommands.",
    ),
];

pub const COMMANDS: &[Command] = &[Command::container(
    "module",
    help,
    "4.0.0",
    "Module management.",
    SUBCOMMANDS,
)];

fn list(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    ctx.out.array(0);
    Ok(())
}

/// MODULE LOAD / LOADEX path ...: Redis's answer to a module it could not load, and
/// the reason in the log, where that answer sends the reader.
fn load(_ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    crate::log_warning!(
        "Module {} failed to load: kvik does not load modules",
        String::from_utf8_lossy(args[2])
    );
    Err("ERR Error loading the extension. Please check the server logs.".into())
}

fn unload(_ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    Err("ERR Error unloading module: no such module with that name".into())
}

fn help(ctx: &mut Ctx, _args: &[&[u8]]) -> CmdResult {
    help_reply(
        ctx.out,
        "MODULE",
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
    );
    Ok(())
}
