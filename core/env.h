#ifndef OVERSEER_CORE_ENV_H_
#define OVERSEER_CORE_ENV_H_

namespace overseer {

// Whether the environment variable `name` switches something off: it is set to "0",
// "false", "no" or "off" (in any case). Unset or anything else: false.
bool EnvSwitchedOff(const char* name);

}  // namespace overseer

#endif  // OVERSEER_CORE_ENV_H_
