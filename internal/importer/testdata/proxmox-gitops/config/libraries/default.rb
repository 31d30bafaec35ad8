module Default
  def self.user(ctx = nil) = 'app'
  def self.group(ctx = nil) = 'config'
end
