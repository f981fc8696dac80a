#ifndef OVERSEER_CLIENT_SESSION_SIGNATURE_KEY_H_
#define OVERSEER_CLIENT_SESSION_SIGNATURE_KEY_H_

// The key under which a session caches what it learnt of a step's signature (its feed
// names, fetches and targets, in order): DirectSession's executors, GrpcSession's
// direct routes.

#include <string>
#include <vector>

namespace overseer {

// Sets *key to the key of the signature; `name_of(f)` gives feed f's name. Names are
// separated by '\0', lists by '\1', so that no two signatures share a key.
template <typename Feeds, typename NameOf>
void SignatureKey(const Feeds& feeds, NameOf name_of, const std::vector<std::string>& fetches,
                  const std::vector<std::string>& targets, std::string* key) {
  key->clear();
  for (const auto& f : feeds) key->append(name_of(f)).push_back('\0');
  key->push_back('\1');
  for (const auto& f : fetches) key->append(f).push_back('\0');
  key->push_back('\1');
  for (const auto& t : targets) key->append(t).push_back('\0');
}

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_SIGNATURE_KEY_H_
