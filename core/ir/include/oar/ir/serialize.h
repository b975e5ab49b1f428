/// \file serialize.h
/// JSON form of a program (nlohmann/json) and save/load of a program with
/// its parameters. to_json(from_json(j)) == j exactly: values are numbered
/// densely, attributes carry their type, floats round-trip.
#pragma once

#include <string>

#include "oar/ir/program.h"

namespace oar::ir {

/// The newest format version (2: region arguments); loading a newer one
/// fails. A program without region arguments is still written as
/// kProgramFormatVersionNoArguments (1), so older readers load it.
inline constexpr int kProgramFormatVersion = 2;
inline constexpr int kProgramFormatVersionNoArguments = 1;

/// JSON text of a program (constants are referenced by name; their data
/// goes to safetensors with the parameters).
std::string to_json(const Program& program, int indent = 1);
/// Parses JSON text; `constants` supplies the constants' tensors by name.
/// `source` names the file in errors. Runs verify().
Program from_json(const std::string& text, const ParamMap& constants, const std::string& source = "<string>");

/// Writes `path`.json (the program) and `path`.safetensors (parameters and
/// constants, constants under "const:<name>") as a pair: both are written
/// to temporary files and fsynced, the parameters record a hash of the
/// program ("oar.program_hash" metadata) and the renames go through
/// `path`.json.pending, so a save that fails or is killed at any point
/// leaves a pair that loads: the earlier one, or once the parameters are in
/// place, the new one (Note [Saving a program and its parameters as a pair]
/// in serialize.cpp). It also removes the temporary files of killed saves.
/// Every parameter of the program must be in `params`, with its type.
void save(const Program& program, const ParamMap& params, const std::string& path);

/// What load() returns.
struct LoadedProgram {
  Program program;
  ParamMap params;
};

/// Reads `path`.json and `path`.safetensors onto `device` (or the
/// `path`.json.pending a killed save left, when the parameters name it by
/// its hash). Any problem (missing file, bad JSON, JSON nested deeper than
/// 64 levels, unknown op, bad value references, a parameter missing or of
/// the wrong dtype/shape, parameters saved with another program, a hostile
/// safetensors file) throws oar::Error naming the file and what is wrong.
LoadedProgram load(const std::string& path, const Device& device);

}  // namespace oar::ir
