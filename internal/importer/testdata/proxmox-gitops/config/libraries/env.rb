module Env
  def self.get(ctx, key) = ENV[key.to_s.upcase]
end
